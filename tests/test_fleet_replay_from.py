"""fleet --replay measures the capacity itself: --from without --key was refused as "--key None"."""

from secperf.cli import main


def test_replay_with_from_and_no_key_names_from_not_a_none_key(capsys, tmp_path):
    out = tmp_path / "r"
    code = main(["fleet", "--replay", "10", "--from", str(tmp_path / "server.json"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "--from" in err and "--replay" in err and "--key None" not in err
    assert not out.exists() or not list(out.iterdir())
