"""``cybpe.download(name)``: the one place cybpe uses the network, and only when called.

Each file of the encoding that is not already present (and valid) offline is fetched from its
registered address, its sha256 checked *before* anything is written, and then written
atomically (temporary file + rename, :mod:`cybpe.io.atomic`): into tiktoken's cache under the
sha1 of the address (so tiktoken finds it too), or, with ``directory=``, below that directory
under the file's registered path (the ``$CYBPE_ENCODINGS_DIR`` layout).

Thread safety: safe to call from several threads; two calls for the same file may both fetch
it, and the second rename wins with identical bytes.
"""

from __future__ import annotations

import hashlib
import os
from typing import Optional, Union

from cybpe.encodings.cache import EncodingFile, check_sha256, find_file, tiktoken_cache_dir
from cybpe.encodings.registry import encoding_entry
from cybpe.errors import DownloadError, HashMismatchError, InvalidParameterError, MissingEncodingFileError, ParameterTypeError
from cybpe.io.atomic import atomic_write_bytes

#: Larger than any registered file (o200k_base.tiktoken is 3.6 MB, Qwen 3's tokenizer.json
#: 11 MB): a server that sends more is refused rather than filling memory.
MAX_BYTES = 256 * 1024 * 1024


def _address(file: EncodingFile, base_url: Optional[str]) -> str:
    assert file.url is not None
    if base_url is None:
        return file.url
    # Keep the path below the host: https://host/encodings/x.tiktoken -> <base_url>/encodings/x.tiktoken
    path = file.url.split("://", 1)[-1].split("/", 1)[-1]
    return base_url.rstrip("/") + "/" + path


def _fetch(address: str, timeout: float) -> bytes:
    # Imported here: urllib.request (http.client, email, ssl) was 8 ms of every `import cybpe`.
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(address, timeout=timeout) as response:
            data = response.read(MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DownloadError(f"cannot fetch {address}: {exc}") from None
    if len(data) > MAX_BYTES:
        raise DownloadError(f"{address} sends more than {MAX_BYTES} bytes: not an encoding file")
    return data


def download(name: str, *, directory: Union[str, "os.PathLike[str]", None] = None,
             base_url: Optional[str] = None, timeout: float = 60.0) -> list[str]:
    """Fetch the files of encoding ``name`` that are not already available offline; returns
    the local path of every file, in the registered order.

    ``directory``: write below this directory under each file's registered path (point
    ``$CYBPE_ENCODINGS_DIR`` at it) instead of tiktoken's cache. ``base_url``: fetch from a
    mirror holding the same paths (``<base_url>/encodings/cl100k_base.tiktoken``); the cache
    name stays the sha1 of the registered address. A file already present is checked and kept.
    Raises :class:`~cybpe.errors.DownloadError` (network, HTTP status, no registered address,
    tiktoken's cache turned off and no ``directory``) or :class:`~cybpe.errors.HashMismatchError`
    (the fetched bytes are not the registered file); nothing is written then."""
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise ParameterTypeError(f"directory must be a str or os.PathLike, not {type(directory).__name__}")
    if base_url is not None and (not isinstance(base_url, str) or "://" not in base_url):
        raise InvalidParameterError(f"base_url must be an address such as 'http://host:port/', not {base_url!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise InvalidParameterError(f"timeout must be a positive number of seconds, not {timeout!r}")
    entry = encoding_entry(name)
    paths = []
    for file in entry.files:
        if directory is not None:
            target = os.path.join(os.fspath(directory), *file.path.split("/"))
            if os.path.isfile(target):
                check_sha256(target, file, name)  # a wrong file is reported, never replaced
                paths.append(target)
                continue
        else:
            try:  # already available offline (checked): nothing to fetch
                paths.append(find_file(file, name))
                continue
            except MissingEncodingFileError:
                pass
        if file.url is None:
            raise DownloadError(f"encoding {name!r}: no download address is registered for {file.path!r} "
                                f"(sha256 {file.sha256}); copy it to $CYBPE_ENCODINGS_DIR/{file.path}")
        if directory is None:
            cache = tiktoken_cache_dir()
            if cache is None:
                raise DownloadError("tiktoken's cache is turned off (TIKTOKEN_CACHE_DIR is empty): "
                                    "give download(..., directory=)")
            target = os.path.join(cache, file.cache_name or "")
        address = _address(file, base_url)
        data = _fetch(address, timeout)
        digest = hashlib.sha256(data).hexdigest()
        if digest != file.sha256:
            raise HashMismatchError(f"{address}: the {len(data)} bytes fetched have sha256 {digest}, not "
                                    f"{file.sha256} (file {file.path!r} of encoding {name!r}); nothing was written")
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        except OSError as exc:
            raise DownloadError(f"cannot create the folder of {target}: {exc}") from None
        atomic_write_bytes(target, data)
        paths.append(target)
    return paths
