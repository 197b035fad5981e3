"""The runs library: every run saved as it happens, in SQLite (the default) or a shared PostgreSQL database.

`runs` holds the Store and its revision rules; `access` who may see which runs; `sqlite` and `postgres` are the two backends it speaks through.
"""

from .access import PRIVATE_RUNS_ENV, TEACHERS_ENV, Teachers, Viewer, is_teacher, private_runs
from .runs import (
    ALLOW_DELETE_OTHERS,
    DEFAULT_PATH,
    LAST_RUN_KEY,
    MIGRATIONS,
    SCHEMA_VERSION,
    ForkNode,
    RunChanged,
    RunSummary,
    Store,
    StoreError,
    default_owner,
    default_path,
    is_url,
)

__all__ = [
    "ALLOW_DELETE_OTHERS",
    "DEFAULT_PATH",
    "LAST_RUN_KEY",
    "PRIVATE_RUNS_ENV",
    "TEACHERS_ENV",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ForkNode",
    "RunChanged",
    "RunSummary",
    "Store",
    "StoreError",
    "Teachers",
    "Viewer",
    "default_owner",
    "default_path",
    "is_teacher",
    "is_url",
    "private_runs",
]
