"""A griffe extension: cybpe's docstrings use Sphinx roles (``:class:`~cybpe.Tokenizer```);
mkdocstrings renders Markdown. Each role becomes an autorefs link when its target is a name
the API reference documents, and inline code otherwise (an internal module or function), so
the strict build has no unresolved reference and no role shows up literally. A docstring's
reStructuredText ``::`` before a literal block becomes ``:``, and the block a fenced one."""

from __future__ import annotations

import re

import griffe

# The objects the API reference pages render (docs/api/*.md), and their members.
DOCUMENTED_PREFIXES = (
    "cybpe.Tokenizer", "cybpe.StreamDecoder", "cybpe.Vocab", "cybpe.ChunkCounts", "cybpe.ParallelSet",
    "cybpe.Shard", "cybpe.PreTokenizer", "cybpe.errors.", "cybpe.dask.", "cybpe.spark.", "cybpe.hookspecs",
    "cybpe.encodings.EncodingFile",
)
DOCUMENTED_FUNCTIONS = {
    "cybpe.train", "cybpe.count", "cybpe.files", "cybpe.shards", "cybpe.load", "cybpe.save",
    "cybpe.encode_files", "cybpe.get_pretokenizer", "cybpe.list_pretokenizers",
    "cybpe.pretokenizer_from_spec", "cybpe.register_plugin", "cybpe.unregister_plugin",
    "cybpe.set_regex_timeout", "cybpe.hookimpl", "cybpe.get_encoding", "cybpe.encoding_for_model",
    "cybpe.encoding_name_for_model", "cybpe.list_encoding_names", "cybpe.download",
    "cybpe.bits_per_byte", "cybpe.errors", "cybpe.dask", "cybpe.spark",
}
#: Short names used inside cybpe's docstrings, by the public name they mean.
PUBLIC_BY_SHORT_NAME = {
    "Tokenizer": "cybpe.Tokenizer", "ChunkCounts": "cybpe.ChunkCounts", "Vocab": "cybpe.Vocab",
    "Shard": "cybpe.Shard", "PreTokenizer": "cybpe.PreTokenizer", "ParallelSet": "cybpe.ParallelSet",
    "StreamDecoder": "cybpe.StreamDecoder", "EncodingFile": "cybpe.encodings.EncodingFile",
}

_ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|exc|data|obj):`(~?)([^`]+)`")
_LITERAL = re.compile(r"(?m)^(?P<lead>[^\n]*?)::[ \t]*\n\n(?P<block>(?:(?:[ \t]+[^\n]*)?\n)+)")


def _documented(path: str) -> bool:
    return path in DOCUMENTED_FUNCTIONS or any(
        path == p.rstrip(".") or path.startswith(p if p.endswith(".") else p + ".") for p in DOCUMENTED_PREFIXES)


def _lookup(root: griffe.Object, path: str) -> griffe.Object | None:
    """The object at a dotted path in the loaded package (aliases followed), or None."""
    parts = path.split(".")
    if parts[0] != root.name:
        return None
    obj = root
    for part in parts[1:]:
        if part not in obj.members:
            return None
        obj = obj.members[part]
        if obj.is_alias:
            try:
                obj = obj.final_target
            except Exception:  # an alias to something outside the package
                return None
    return obj


def _target(name: str, obj: griffe.Object, root: griffe.Object) -> str | None:
    """The documented public path a role's target means, or None."""
    name = name.strip().rstrip("()")
    candidates = [name]
    if name.startswith("."):
        candidates = [obj.module.path.rsplit(".", 1)[0] + name]
    elif "." not in name:
        candidates = [PUBLIC_BY_SHORT_NAME.get(name, ""), f"cybpe.errors.{name}"]
        owner = obj if obj.is_class else obj.parent if obj.parent is not None and obj.parent.is_class else None
        if owner is not None:
            candidates.append(f"{PUBLIC_BY_SHORT_NAME.get(owner.name, owner.path)}.{name}")
        candidates.append(f"cybpe.{name}")
    elif not name.startswith("cybpe."):
        head, _, rest = name.partition(".")
        if head in PUBLIC_BY_SHORT_NAME:
            candidates = [f"{PUBLIC_BY_SHORT_NAME[head]}.{rest}"]
    for path in candidates:
        if path and _documented(path) and _lookup(root, path) is not None:
            return path
    return None


def _rewrite(text: str, obj: griffe.Object, root: griffe.Object) -> str:
    def role(m: re.Match) -> str:
        kind, tilde, name = m.groups()
        shown = name.rsplit(".", 1)[-1] if tilde else name
        if kind in ("func", "meth"):
            shown = shown if shown.endswith(")") else shown + "()"
        target = _target(name, obj, root)
        return f"[`{shown}`][{target}]" if target else f"`{shown}`"

    def literal(m: re.Match) -> str:
        lead = m.group("lead")
        block = m.group("block")
        lines = block.rstrip("\n").split("\n")
        indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        body = "\n".join(l[indent:] for l in lines)
        head = (lead + ":") if lead.strip() else ""
        return f"{head}\n\n```text\n{body}\n```\n\n"

    text = _LITERAL.sub(literal, text + "\n").rstrip("\n")
    return _ROLE.sub(role, text)


def _walk(obj: griffe.Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member, seen)


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring once the whole package is loaded (targets are looked up in it)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.name != "cybpe":
            return
        for obj in _walk(pkg, set()):
            if obj.docstring is not None:
                obj.docstring.value = _rewrite(obj.docstring.value, obj, pkg)
