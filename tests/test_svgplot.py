"""The SVG chart the benchmark write-ups use: valid XML, one marker per point, reference lines drawn."""
import xml.etree.ElementTree as ET

import pytest

from benchmarks.svgplot import line_chart

NS = "{http://www.w3.org/2000/svg}"


def test_chart_has_a_marker_per_point_and_dashed_reference_lines(tmp_path):
    path = line_chart({"a": [(0, 0.1), (10, 0.5), (20, 0.4)], "b": [(0, 0.2), (20, 0.3)]}, tmp_path / "c.svg",
                      "title & <chars>", "step", "accuracy", ymin=0, ymax=1, hlines={"SFT": 0.175})
    root = ET.parse(path).getroot()  # parses: the title's & and < are escaped
    assert len(root.findall(f"{NS}circle")) == 5
    assert len([e for e in root.findall(f"{NS}line") if e.get("stroke-dasharray")]) == 1
    texts = [t.text for t in root.findall(f"{NS}text")]
    assert "title & <chars>" in texts and "a" in texts and "SFT" in texts


def test_point_positions_follow_the_axes(tmp_path):
    root = ET.parse(line_chart({"a": [(0, 0.0), (1, 1.0)]}, tmp_path / "c.svg", "t", "x", "y",
                               ymin=0, ymax=1)).getroot()
    (low, high) = [(float(c.get("cx")), float(c.get("cy"))) for c in root.findall(f"{NS}circle")]
    assert low[0] < high[0] and low[1] > high[1]  # right and up (SVG's y grows downwards)


def test_no_points_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no points"):
        line_chart({"a": []}, tmp_path / "c.svg", "t", "x", "y")
