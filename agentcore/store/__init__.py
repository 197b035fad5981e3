"""The runs library: every run saved as it happens, in SQLite (the default) or a shared PostgreSQL database.

`runs` holds the Store (connection, runs and steps, revisions, owners, lineage) and its revision rules; `labels`
its labels and scans, `experiments` its test matrices' results, each a part of the Store; `schema` the tables and
the SQL; `access` who may see which runs; `sqlite` and `postgres` are the two backends it speaks through.
"""

from .access import PRIVATE_RUNS_ENV, TEACHERS_ENV, Teachers, Viewer, default_owner, is_teacher, private_runs
from .experiments import CellResult, Experiment
from .labels import ALLOW_DELETE_OTHERS
from .runs import DEFAULT_PATH, LAST_RUN_KEY, ForkNode, RunSummary, Store, default_path, is_url
from .schema import MIGRATIONS, SCHEMA_VERSION, RunChanged, StoreError

__all__ = [
    "ALLOW_DELETE_OTHERS",
    "DEFAULT_PATH",
    "LAST_RUN_KEY",
    "PRIVATE_RUNS_ENV",
    "TEACHERS_ENV",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CellResult",
    "Experiment",
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
