"""`agentcore proxy` on the command line: its refusals in one line, and a real process that records a call and
never prints the key."""

from __future__ import annotations

import sys
import time

import pytest
from support.proxy_rig import KEY
from support.servers import _start, free_port
from support.stand_in import Reply, StandIn

from agentcore.cli.main import main
from agentcore.store import Store

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--listen", "0.0.0.0:0"], "--allow-remote"),
        (["--listen", "0.0.0.0:0", "--allow-remote"], "--token"),
        (["--listen", "nowhere"], "HOST:PORT"),
        (["--upstream", "file:///etc/passwd"], "--upstream"),
        (["--pause", "step:zero"], "step takes a whole number"),
        (["--pause", "always", "--pause", "nowhere:1"], "the kinds are"),
        (["--hold-limit", "0"], "--hold-limit"),
    ],
)
def test_a_wrong_option_is_one_line_and_exit_2(tmp_path, capsys, options, said):
    code = main(["proxy", "--db", str(tmp_path / "runs.db"), "--listen", "127.0.0.1:0", *options])
    err = capsys.readouterr().err
    assert code == 2
    assert said in err and err.count("\n") == 1


@pytest.mark.slow
def test_the_command_records_a_call_and_prints_no_key(tmp_path):
    port, db = free_port(), tmp_path / "runs.db"
    with StandIn(Reply.chat("Hello through the proxy.")) as upstream:
        cmd = [sys.executable, "-m", "agentcore", "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", upstream.url]
        server = _start([*cmd, "--db", str(db)], f"http://127.0.0.1:{port}", "/agentcore/holds", tmp_path / "log", 60)
        try:
            sdk = openai.OpenAI(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0)
            reply = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == "Hello through the proxy."
            for _ in range(300):  # the call's log line is written once its reply has gone
                if "POST /v1/chat/completions 200" in (tmp_path / "log").read_text():
                    break
                time.sleep(0.1)
        finally:
            server.stop()
    [summary] = Store(str(db)).list_runs()
    assert summary.steps == 1
    log = (tmp_path / "log").read_text()
    assert "POST /v1/chat/completions 200" in log
    assert KEY not in log
    assert KEY.encode() not in db.read_bytes()
