"""Issue 47: data files were 0644 in 0755 folders, so code run under another uid (the sandbox's 65534)
could read private notes and imported works when the data folder is outside a private home."""
import stat

from atlas_data import data_dir


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_data_folder_and_private_files_are_the_owners_only(tmp_path, monkeypatch, catalog):
    from papers.annotations import AnnotationStore
    from papers.userstore import UserStore

    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "fresh" / "data"))
    root = data_dir()
    assert _mode(root) == 0o700
    users = UserStore()
    notes = AnnotationStore()
    notes.set_note(catalog, "search-r1", "private")
    for path in (users.path, notes.path):
        assert _mode(path) == 0o600, path
        for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            assert not side.exists() or _mode(side) == 0o600, side


def test_the_default_data_folder_is_tightened(tmp_path, monkeypatch):
    monkeypatch.delenv("ATLAS_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    old = tmp_path / ".cache" / "agentic-rl-atlas"
    old.mkdir(parents=True, mode=0o755)
    old.chmod(0o755)  # as an earlier version left it
    assert data_dir() == old and _mode(old) == 0o700


def test_a_shared_data_folder_keeps_its_mode(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o750)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(shared))
    assert data_dir() == shared and _mode(shared) == 0o750
