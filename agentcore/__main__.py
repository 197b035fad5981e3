from .cli.main import main

# guarded: a scan's worker processes (spawned) import the main module again, and must not run the command once more
if __name__ == "__main__":
    raise SystemExit(main())
