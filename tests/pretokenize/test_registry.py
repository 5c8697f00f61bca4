"""The plugin registry: discovery, listing, errors, in-process and third-party plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cybpe
from cybpe.errors import (
    DuplicatePreTokenizerError,
    InvalidParameterError,
    MissingPluginError,
    PluginError,
    UnknownPreTokenizerError,
)

BUILTINS = {"gpt2", "cl100k", "o200k", "llama3", "qwen2", "gpt4-digits", "gpt4-digits-rtl", "abugida", "regex",
            "superbpe"}


def test_builtins_are_listed_with_their_distribution():
    infos = {i["name"]: i for i in cybpe.list_pretokenizers()}
    assert BUILTINS <= set(infos)
    for name in BUILTINS:
        assert infos[name]["distribution"] == "cybpe"
        assert infos[name]["version"] == cybpe.__version__
        assert infos[name]["description"]


def test_plugins_load_lazily_not_at_import():
    code = "import cybpe, cybpe.pretokenize.registry as r; print(r._REGISTRY._loaded); cybpe.list_pretokenizers(); print(r._REGISTRY._loaded)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_unknown_name_lists_what_exists():
    with pytest.raises(UnknownPreTokenizerError) as info:
        cybpe.get_pretokenizer("cl100")
    message = str(info.value)
    assert "'cl100'" in message and "Did you mean 'cl100k'" in message
    for name in BUILTINS:
        assert name in message
    assert isinstance(info.value, KeyError)


def test_bad_params_name_the_param_and_allowed_values():
    with pytest.raises(InvalidParameterError, match=r"'digits' must be one of 1, 2, 3, not 4"):
        cybpe.get_pretokenizer("gpt4-digits", digits=4)
    with pytest.raises(InvalidParameterError, match="has no parameter 'digit'"):
        cybpe.get_pretokenizer("gpt4-digits", digit=2)
    with pytest.raises(InvalidParameterError, match="pattern"):
        cybpe.get_pretokenizer("regex")
    with pytest.raises(InvalidParameterError, match="does not compile"):
        cybpe.get_pretokenizer("regex", pattern="(unclosed")


class DuplicatePlugin:
    @cybpe.hookimpl
    def cybpe_register_pretokenizers(self, register):
        register("cl100k", r"\S+")


class RaisingPlugin:
    @cybpe.hookimpl
    def cybpe_register_pretokenizers(self, register):
        raise RuntimeError("boom")


class CharsPlugin:
    @cybpe.hookimpl
    def cybpe_register_pretokenizers(self, register):
        """One piece per character."""
        register("chars", r"(?s:.)")


def test_duplicate_name_says_which_plugins_clash():
    with pytest.raises(DuplicatePreTokenizerError) as info:
        cybpe.register_plugin(DuplicatePlugin(), name="dup-test")
    assert "'cl100k'" in str(info.value) and "'cl100k'" in str(info.value)
    assert "dup-test" in str(info.value)
    # the failed plugin is not left behind
    assert cybpe.get_pretokenizer("cl100k").pattern != r"\S+"


def test_plugin_that_raises_is_named():
    with pytest.raises(PluginError, match="raising-test.*boom"):
        cybpe.register_plugin(RaisingPlugin(), name="raising-test")
    assert "cl100k" in {i["name"] for i in cybpe.list_pretokenizers()}


def test_in_process_plugin():
    name = cybpe.register_plugin(CharsPlugin(), name="chars-test")
    try:
        pre = cybpe.get_pretokenizer("chars")
        assert pre.split("ab c") == ["a", "b", " ", "c"]
        info = {i["name"]: i for i in cybpe.list_pretokenizers()}["chars"]
        assert info["plugin"] == "chars-test" and info["description"] == "One piece per character."
        assert info["distribution"] is None
    finally:
        cybpe.unregister_plugin(name)
    with pytest.raises(UnknownPreTokenizerError):
        cybpe.get_pretokenizer("chars")


def test_missing_plugin_in_a_saved_spec():
    spec = {"name": "not-installed", "params": {}, "plugin": "cybpe-extra-plugins", "version": "9.9"}
    with pytest.raises(MissingPluginError, match="not-installed.*cybpe-extra-plugins"):
        cybpe.pretokenizer_from_spec(spec)


def run_with_plugin(target, code, **env):
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]), **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_third_party_plugin_found_through_its_entry_point(plugin_site):
    code = (
        "import cybpe, json\n"
        "info = {i['name']: i for i in cybpe.list_pretokenizers()}['whitespace']\n"
        "print(json.dumps([info, cybpe.get_pretokenizer('whitespace').split('a  b\\tc')]))\n"
    )
    info, pieces = json.loads(run_with_plugin(plugin_site, code))
    assert info["distribution"] == "cybpe-whitespace-plugin"
    assert info["version"] == "1.2.0"
    assert info["plugin"] == "whitespace"
    assert pieces == ["a", "  ", "b", "\t", "c"]


def test_autoload_can_be_disabled_and_plugins_blocked(plugin_site):
    code = "import cybpe; print(sorted(i['name'] for i in cybpe.list_pretokenizers()))"
    assert "whitespace" not in run_with_plugin(plugin_site, code, CYBPE_DISABLE_PLUGIN_AUTOLOAD="1")
    assert "whitespace" not in run_with_plugin(plugin_site, code, CYBPE_BLOCKED_PLUGINS="whitespace")
    assert "'o200k'" not in run_with_plugin(plugin_site, code, CYBPE_BLOCKED_PLUGINS="o200k")
    assert "whitespace" in run_with_plugin(plugin_site, code)


BLOCK_INSTALLED_BUILTINS = '''
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):  # as in a checkout built in place, never installed
    def find_spec(self, name, path=None, target=None):
        if name == "cybpe_pretokenizers":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
import cybpe
names = {i["name"] for i in cybpe.list_pretokenizers()}
assert {"gpt2", "cl100k", "o200k", "abugida"} <= names, names
assert cybpe.get_pretokenizer("cl100k").split("Hello world") == ["Hello", " world"]
print(sys.modules["cybpe_pretokenizers"].__file__)
'''


def test_builtins_load_from_a_source_checkout_that_is_not_installed():
    folder = Path(cybpe.__file__).resolve().parents[1] / "pretokenizers"
    if not (folder / "__init__.py").is_file():
        pytest.skip("an installed cybpe: the source-checkout fallback has no pretokenizers/ folder to find")
    env = dict(os.environ, CYBPE_DISABLE_PLUGIN_AUTOLOAD="1")
    out = subprocess.run([sys.executable, "-c", BLOCK_INSTALLED_BUILTINS], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve() == (folder / "__init__.py").resolve()


def test_distribution_name_and_version_match_the_full_metadata_parser():
    """The registry reads a plugin distribution's name and version from its metadata header
    (registry._name_and_version); on every installed distribution that equals what
    importlib.metadata's full parser says."""
    import importlib.metadata

    from cybpe.pretokenize.registry import _name_and_version

    seen = 0
    for dist in importlib.metadata.distributions():
        assert _name_and_version(dist) == (dist.metadata["name"], dist.version), dist.metadata["name"]
        seen += 1
    assert seen > 5  # pytest, pluggy, regex, numpy, cybpe at least


def test_distribution_header_reader_falls_back_on_an_unusual_file():
    from cybpe.pretokenize.registry import _name_and_version

    class Odd:  # no Version field in the header: the full parser's answer is used
        metadata = {"name": "odd"}
        version = "9"

        def read_text(self, name):
            return "Metadata-Version: 2.1\nName: odd\n\nVersion: 1 (in the body, not a field)\n"

    assert _name_and_version(Odd()) == ("odd", "9")
