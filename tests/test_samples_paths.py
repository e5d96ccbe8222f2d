"""The notebooks' default data: the variable when set, else the samples beside the package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import murmur_analysis as ma
from murmur_analysis.errors import NoSourceError
from murmur_analysis.loading import samples as samples_module


def test_the_default_is_the_bundled_samples_whatever_the_working_folder(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MURMUR_ANALYSIS_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert ma.data_paths() == [str(samples)] and ma.sample_data() == samples


def test_the_variable_names_one_path_or_several(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", "/data/a")
    assert ma.data_paths() == ["/data/a"]
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", os.pathsep.join(["/data/a", "", "~/b"]))
    assert ma.data_paths() == ["/data/a", os.path.expanduser("~/b")]  # ~ expanded, as every path the API takes
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", " ")
    assert ma.data_paths() == [str(ma.sample_data())]


def test_an_install_without_samples_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samples_module, "__file__", str(tmp_path / "site-packages" / "murmur_analysis" / "samples.py"))
    with pytest.raises(NoSourceError) as raised:
        ma.sample_data()
    assert "MURMUR_ANALYSIS_DATA" in (raised.value.hint or "")


def test_the_session_and_price_variables_name_what_a_notebook_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MURMUR_ANALYSIS_SESSIONS", raising=False)
    monkeypatch.delenv("MURMUR_ANALYSIS_PRICES", raising=False)
    assert ma.session_paths() == [] and ma.prices_path() is None
    monkeypatch.setenv("MURMUR_ANALYSIS_SESSIONS", os.pathsep.join(["/work/a", " ", "~/b"]))
    monkeypatch.setenv("MURMUR_ANALYSIS_PRICES", " /etc/prices.csv ")
    home = os.path.expanduser("~")
    assert ma.session_paths() == ["/work/a", f"{home}/b"] and ma.prices_path() == "/etc/prices.csv"
    monkeypatch.setenv("MURMUR_ANALYSIS_PRICES", "")
    assert ma.prices_path() is None
