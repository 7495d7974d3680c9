"""``toolwire run`` and files kept from the model (modelExclude): ``--approve yes`` never allows
one (it rejects the read, saying why, and nothing of the file is printed or sent); the question
on a terminal opens with the file and its pattern, and "y" reads it for that call."""

from __future__ import annotations

import os

from cli_run import final_calls, on_a_terminal, read_question, run
from conftest import write_script

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-example"
NOTICE = "Kept from the model (modelExclude): .env (pattern '.env'). Allowing shows it to the model for this call only."
READ = [{"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}, "id": "r1"}]}, {"text": "Done."}]


def test_approve_yes_rejects_a_read_of_an_excluded_file(repo, tmp_path):
    (repo / ".env").write_text(SECRET + "\n")
    log = tmp_path / "requests.jsonl"
    done = run(repo, write_script(tmp_path / "s.jsonl", READ), "--json", "--approve", "yes",
               "--settings", f'{{"replayLog": "{log}"}}')
    assert done.returncode == 0, done.stderr
    call = final_calls(done.stdout)["r1"]
    assert (call["status"], call["cancelReason"]) == ("canceled", "rejected"), call
    assert f"read_file rejected: {NOTICE} (--approve yes never allows a file kept from the model" in done.stderr
    for text in (done.stdout, done.stderr, log.read_text()):
        assert "wJalrXUtnFEMI" not in text
    assert "the user did not allow it for this call" in log.read_text()  # what the model read


def test_approve_yes_reads_it_when_the_setting_is_empty(repo, tmp_path):
    (repo / ".env").write_text(SECRET + "\n")
    done = run(repo, write_script(tmp_path / "s.jsonl", READ), "--json", "--approve", "yes",
               "--settings", '{"modelExclude": []}')
    assert final_calls(done.stdout)["r1"]["status"] == "done"


def test_the_question_on_a_terminal_opens_with_the_file_and_pattern(repo, tmp_path):
    (repo / ".env").write_text(SECRET + "\n")
    with on_a_terminal(repo, write_script(tmp_path / "s.jsonl", READ), "--json") as (proc, master):
        question = read_question(proc)
        assert question[0] == NOTICE, question
        assert question[1] == "Allow read_file? .env"
        os.write(master, b"y\n")
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
    call = final_calls(out.decode())["r1"]
    assert call["status"] == "done" and call["result"]["content"] == SECRET + "\n"
