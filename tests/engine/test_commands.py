"""The plan as the commands that would carry it out (a dry run).

The lines mirror ``pulsar-admin namespaces unload <tenant/ns> --bundle <range> [--destinationBroker <id>]``
(``CmdNamespaces.Unload``) and the REST resource it calls, ``PUT /admin/v2/namespaces/{tenant}/{namespace}/
{bundle}/unload?destinationBroker=`` (``admin/v2/Namespaces.unloadNamespaceBundle``; v1 namespaces:
``admin/v1/Namespaces``, ``/admin/namespaces/{property}/{cluster}/{namespace}/{bundle}/unload``).
"""
import json
import shlex

import pytest

from engine.cli import main
from engine.commands import DRY_RUN_HEADER, UnloadCommand, commands_text, unload_commands
from engine.io import load_snapshot
from engine.results import Cycle, SheddingResult, Unload, UnloadDecision

SNAP = "samples/snapshots/avgshedder-pairing-6-brokers.json"
ELM = "samples/extensible/transfer-shedder-5-brokers.json"


def _cycle(n, *unloads, decisions=None, reason=""):
    sh = SheddingResult("X", "Success", "") if decisions is not None else None
    if sh is not None:
        sh.decisions = decisions
    return Cycle(n, 0, sh, unloads=list(unloads), reason=reason)


def test_commands001_order_and_destinations_modular():
    c1 = _cycle(1, Unload("a:8080", "t/ns/0x00000000_0x40000000", "c:8080", "over"),
                Unload("b:8080", "t/ns/0x40000000_0x80000000", "c:8080", "over"))
    c2 = _cycle(2, reason="nothing over the threshold")
    c3 = _cycle(3, Unload("a:8080", "t/ns2/0x80000000_0xffffffff", "b:8080", "over"))
    cmds = unload_commands([c1, c2, c3])
    assert [(c.cycle, c.bundle, c.destination) for c in cmds] == [
        (1, "t/ns/0x00000000_0x40000000", "c:8080"), (1, "t/ns/0x40000000_0x80000000", "c:8080"),
        (3, "t/ns2/0x80000000_0xffffffff", "b:8080")]
    text = commands_text([c1, c2, c3])
    lines = text.splitlines()
    assert lines[0] == "#!/bin/sh" and all(f"# {h}" in lines for h in DRY_RUN_HEADER)
    cmd_lines = [ln for ln in lines if ln.startswith("pulsar-admin")]
    assert cmd_lines[0] == ("pulsar-admin namespaces unload t/ns --bundle 0x00000000_0x40000000 "
                            "--destinationBroker c:8080")
    assert len(cmd_lines) == 3 and "# nothing to unload: nothing over the threshold" in lines


def test_commands002_rest_paths_v1_and_v2():
    v2 = UnloadCommand(1, "a:8080", "public/default/0x00000000_0x40000000", "b:8080")
    v1 = UnloadCommand(1, "a:8080", "sample/use/ns1/0x00000000_0xffffffff", None)
    assert v2.rest() == "PUT /admin/v2/namespaces/public/default/0x00000000_0x40000000/unload?destinationBroker=b:8080"
    assert v1.rest() == "PUT /admin/namespaces/sample/use/ns1/0x00000000_0xffffffff/unload"
    assert v1.pulsar_admin() == "pulsar-admin namespaces unload sample/use/ns1 --bundle 0x00000000_0xffffffff"


def test_commands003_extensible_transfer_vs_plain_unload():
    u1 = Unload("a:8080", "t/ns/0x00000000_0x40000000", "c:8080", "Overloaded")
    transfer = _cycle(1, u1, decisions=[UnloadDecision("Success", "Overloaded", "a:8080", u1.bundle, "c:8080")])
    u2 = Unload("a:8080", "t/ns/0x00000000_0x40000000", "c:8080", "Overloaded")  # c: the predicted lookup
    plain = _cycle(1, u2, decisions=[UnloadDecision("Success", "Overloaded", "a:8080", u2.bundle, None)])
    assert unload_commands([transfer])[0].destination == "c:8080"
    got = unload_commands([plain])[0]
    assert got.destination is None and got.placed_on == "c:8080"
    text = commands_text([plain])
    assert "pulsar-admin namespaces unload t/ns --bundle 0x00000000_0x40000000\n" in text
    assert "# no destination: the next lookup places it (Shedlab predicts c:8080)" in text


def test_commands004_untrusted_names_never_run():
    evil = "t/ns/0x00000000_0x40000000\nrm -rf /"
    c = _cycle(1, Unload("a", evil, "b", ""), Unload("a", "t/n s/0x00000000_0x40000000", "b", ""),
               Unload("a", "t/ns/0x00000000_0x40000000", "b; reboot", ""))
    text = commands_text([c])
    runnable = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    cmds = [ln for ln in runnable if ln.startswith("pulsar-admin")]
    assert cmds == ["pulsar-admin namespaces unload t/ns --bundle 0x00000000_0x40000000 --destinationBroker "
                    "'b; reboot'"]
    assert shlex.split(cmds[0])[-1] == "b; reboot"  # one argument, never a second command
    assert not any("rm -rf" in ln for ln in runnable)
    rest = commands_text([c], "rest")
    assert "destinationBroker=b%3B%20reboot" in rest
    with pytest.raises(ValueError):
        commands_text([c], "bash")


def test_commands005_cli_shed_and_replay(capsys, tmp_path):
    assert main(["shed", SNAP, "--cycles", "2", "--commands"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/sh\n# DRY RUN") and "# cycle 2:" in out
    assert main(["shed", SNAP, "--cycles", "2", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    expected = [f"pulsar-admin namespaces unload {u['bundle'].rsplit('/', 1)[0]} --bundle {u['bundle'].rsplit('/', 1)[1]}"
                f" --destinationBroker {u['destination']}" for c in js["cycles"] for u in c["unloads"]]
    assert expected and [ln for ln in out.splitlines() if ln.startswith("pulsar-admin")] == expected
    assert main(["shed", SNAP, "--commands", "--rest"]) == 0
    assert [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("PUT /admin/v2/namespaces/")]
    # a replay: one cycle per snapshot
    ld = load_snapshot(SNAP)
    tl = tmp_path / "tl.json"
    tl.write_text(json.dumps([ld.to_json(), {**ld.to_json(), "now": ld.now + 60_000}]))
    assert main(["replay", str(tl), "--commands"]) == 0
    out = capsys.readouterr().out
    assert "# cycle 1:" in out and "# cycle 2:" in out and "(snapshot " in out


def test_commands006_cli_exit_codes(capsys, tmp_path):
    assert main(["shed", SNAP, "--commands", "--json"]) == 2
    assert "--commands" in capsys.readouterr().err
    assert main(["shed", SNAP, "--rest"]) == 2
    assert main(["shed", str(tmp_path / "missing.json"), "--commands"]) == 2
    assert main(["replay", str(tmp_path / "missing.json"), "--commands"]) == 2
    err = capsys.readouterr().err
    assert "missing.json" in err and "Traceback" not in err


def test_commands007_cli_extensible_transfer_flag(capsys):
    base = ["shed", ELM, "--strategy", "TransferShedder", "--cycles", "4", "--commands"]
    assert main(base + ["--set", "loadBalancerTransferEnabled=true"]) == 0
    on = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("pulsar-admin")]
    assert main(base + ["--set", "loadBalancerTransferEnabled=false"]) == 0
    off = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("pulsar-admin")]
    assert on and all("--destinationBroker" in ln for ln in on)
    assert off and not any("--destinationBroker" in ln for ln in off)
