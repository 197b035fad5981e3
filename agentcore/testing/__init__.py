"""Pinned tests: expectations kept beside a run (`pinned`), and the matrix that runs them across providers (`runner`)."""
