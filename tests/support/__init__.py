"""What the tests share: the real servers they start, stand-ins, scripted runs, the browser and the app."""
