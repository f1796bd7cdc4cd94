"""The Import page under AppTest: add a work by the form, see it placed, correct it, find it in the explorer."""
import pytest

from test_app_pages import open_page, texts

from papers.userstore import UserStore


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))


def test_form_import_places_and_user_can_correct():
    at = open_page("imports")
    assert "None yet." in texts(at)
    at.text_input[0].input("Teaching a Lean 4 prover with proof-assistant rewards")
    at.text_input[1].input("2026")
    at.text_area[0].input("We train a formal theorem prover in Lean with reinforcement learning from verifier feedback.")
    at.button[0].click().run()  # the form's submit button is the first button on the page
    assert not at.exception, [e.value for e in at.exception]
    works = UserStore().works()
    assert len(works) == 1 and works[0].origin == "user"
    key = works[0].key
    assert works[0].nodes, "placed automatically"
    assert "1 works added, 0 skipped" in " ".join(e.value for e in at.success)
    at.multiselect[0].set_value(["math-formal"])
    next(b for b in at.button if b.label == "Save placement").click().run()
    assert UserStore().get(key).nodes == ("math-formal",)
    page = open_page("taxonomy", node="math-formal")
    shown = " ".join(df.value.to_string() for df in page.dataframe)
    assert "Teaching a Lean 4 prover with proof-assistant rewards" in shown  # the explorer sees user works
    work = open_page("work", key=key)
    assert "Teaching a Lean 4 prover" in texts(work)


def test_form_refuses_bad_year():
    at = open_page("imports")
    at.text_input[0].input("Some title")
    at.text_input[1].input("20x6")
    at.button[0].click().run()
    assert any("'20x6' is not a year" in e.value for e in at.error)
    assert UserStore().works() == []


def test_form_lets_a_long_abstract_through_and_refuses_a_huge_title():
    """Issue 47: a 152 KB abstract was refused as 'broken CSV quoting'; a title of any size was accepted."""
    at = open_page("imports")
    at.text_input[0].input("Huge " * 300)
    at.button[0].click().run()
    # the error names the field, its length and the limit
    assert any(all(part in e.value for part in ("'title'", "1,500", "1,000")) for e in at.error)
    assert UserStore().works() == []
    at.text_input[0].input("A planner with a long abstract")
    at.text_area[0].input("agents plan " * 12_700)  # 152 KB
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    works = UserStore().works()
    assert len(works) == 1 and len(works[0].abstract) > 150_000
