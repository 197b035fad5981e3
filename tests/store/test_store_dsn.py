"""A PostgreSQL password in the runs database's location never reaches a terminal, a page or an error message.

libpq takes a password after `user:` in a URL, in the URL's `?password=` query, or as a key of a key/value
string (`host=… password=…`). With the server down (a closed port on 127.0.0.1) and with a wrong password
against the throwaway cluster, each form is tried through the Store, `agentcore run` (AGENTCORE_DB and
--db) and the app, and a key/value string is never taken for a file name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import page_text
from support.servers import free_port

from agentcore.cli.main import main
from agentcore.secrets import REDACTED, scrub_text
from agentcore.store.postgres import passwords, redact_dsn
from agentcore.store.runs import Store, StoreError, is_url

LONG = "Pq7-hunter2-long"  # long enough to be registered as a secret
SHORT = "pq7x"  # too short to register: only the masking of the location keeps it out
WRONG = "Wr0ng-password-9"


def forms(port: int, password: str, user: str = "ada") -> dict[str, str]:
    """The same server named in each libpq form that holds a password."""
    return {
        "url query": f"postgresql://{user}@127.0.0.1:{port}/runs?sslmode=disable&password={password}",
        "url userinfo": f"postgresql://{user}:{password}@127.0.0.1:{port}/runs",
        "key/value": f"host=127.0.0.1 port={port} user={user} password={password} dbname=runs",
        "key/value quoted": f"host=127.0.0.1 port={port} user={user} password='{password} x' dbname=runs",
    }


def in_cwd(tmp_path: Path, monkeypatch) -> Path:
    """An empty working folder: a key/value string taken for a file name would be created in it."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def assert_store_and_cli_keep_it_out(dsn: str, secret: str, monkeypatch, capsys) -> None:
    """The Store and `agentcore run` (AGENTCORE_DB, then --db) say the database cannot be used, in one line."""
    with pytest.raises(StoreError) as caught:
        Store(dsn)
    message = str(caught.value)
    assert "cannot open the runs database" in message and "\n" not in message
    assert secret not in message and secret not in repr(caught.value.args)
    monkeypatch.setenv("AGENTCORE_DB", dsn)
    assert main(["run", "--provider", "scripted", "--scenario", "weather"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("agentcore: warning: not saving to the runs database") and err.count("\n") == 1, err
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--db", dsn]) == 2
    out2, err2 = capsys.readouterr()
    assert err2.startswith("agentcore: error: --db: ") and err2.count("\n") == 1, err2
    assert secret not in out + err + out2 + err2


def assert_app_keeps_it_out(dsn: str, secret: str, open_app, monkeypatch) -> None:
    """The playground and the Runs page show that the database cannot be used, never the password."""
    monkeypatch.setenv("AGENTCORE_DB", dsn)
    shown = page_text(open_app()) + page_text(open_app("views/runs.py"))
    assert "cannot open the runs database" in shown
    assert secret not in shown


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://h/db?password=pw-1&sslpassword=pw-2", "postgresql://h/db?password=***&sslpassword=***"),
        (
            "postgres://ada:p@ss/w@h:5432,h2/db?application_name=a@b",
            "postgres://ada:***@h:5432,h2/db?application_name=a@b",
        ),
        ("host=h password=pw-1 dbname=db", "host=h password=*** dbname=db"),
        ("host=h password = 'p w\\'1' sslpassword=pw-2", "host=h password = '***' sslpassword=***"),
        ("host=h password=pw 1 dbname=db", "host=h password=***"),  # not pairs: nothing after the key is shown
    ],
)
def test_every_password_form_of_a_connection_string_is_masked_in_its_location(dsn: str, shown: str) -> None:
    assert redact_dsn(dsn) == shown
    assert is_url(dsn)


def test_a_key_value_string_is_a_server_and_a_path_with_an_equals_sign_is_a_file() -> None:
    assert is_url("host=127.0.0.1 dbname=runs") and is_url("  dbname = runs")
    assert not is_url("runs=1.db") and not is_url("/tmp/host=x/runs.db") and not is_url(Path("host=x"))


@pytest.mark.parametrize(("form", "secret"), [("url query", SHORT), ("key/value", LONG), ("key/value quoted", SHORT)])
def test_a_server_that_is_down_is_reported_on_one_line_without_its_password(
    form: str, secret: str, tmp_path: Path, open_app, monkeypatch, capsys
) -> None:
    folder = in_cwd(tmp_path, monkeypatch)
    dsn = forms(free_port(), secret)[form]  # nothing listens on the port
    assert_store_and_cli_keep_it_out(dsn, secret, monkeypatch, capsys)
    assert_app_keeps_it_out(dsn, secret, open_app, monkeypatch)
    assert list(folder.iterdir()) == []


def test_a_password_in_the_location_is_registered_as_a_secret(tmp_path: Path, monkeypatch) -> None:
    in_cwd(tmp_path, monkeypatch)
    for form, dsn in forms(free_port(), LONG).items():
        with pytest.raises(StoreError):
            Store(dsn)
        assert scrub_text(f"said {LONG}.") == f"said {REDACTED}.", form
        assert LONG in passwords(dsn) or f"{LONG} x" in passwords(dsn)


def test_a_wrong_password_is_reported_without_it_and_a_key_value_string_opens_the_server(
    pg_cluster, tmp_path: Path, open_app, monkeypatch, capsys
) -> None:
    pg_cluster.password_role("carol", "right-password-1")
    folder = in_cwd(tmp_path, monkeypatch)
    wrong = forms(pg_cluster.port, WRONG, user="carol").values()
    for dsn in wrong:  # refused for the password, not for the database it names
        with pytest.raises(StoreError, match='password authentication failed for user "carol"'):
            Store(dsn)
    for dsn in wrong:
        assert_store_and_cli_keep_it_out(dsn, WRONG, monkeypatch, capsys)
    for dsn in wrong:  # after the command line's: the app's loggers write on the stderr it captures
        assert_app_keeps_it_out(dsn, WRONG, open_app, monkeypatch)
    assert list(folder.iterdir()) == []
    database = pg_cluster.new_database().rsplit("/", 1)[1]
    store = Store(f"host=127.0.0.1 port={pg_cluster.port} user=agentcore dbname={database} password={WRONG}")
    assert store.backend == "postgresql" and store.location.endswith("password=***") and store.check() == "ok"
