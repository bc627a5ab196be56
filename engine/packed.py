"""Long lists of names pickled as one text.

A stored snapshot (the dashboard's diskcache) holds each bundle name at least twice: the view's bundle
list and the brokers' ``bundles`` lists. Pickle writes a list of strings item by item, each string also
entering its memo table: at a million bundles that was most of a 0.8 s pickle. :func:`pack_names`
joins such a list into one text (the separator is a NUL character; a list in which some name holds one
is left as it is, so every list comes back equal), and :func:`unpack_names` splits it again.
"""
from __future__ import annotations

__all__ = ["PackedNames", "pack_names", "unpack_names"]

_SEP = "\x00"
#: shorter lists are pickled as they are (nothing to gain)
_MIN_ITEMS = 32


class PackedNames:
    """A list of names joined into one text (what :func:`pack_names` hands to a pickle)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __reduce__(self):
        return PackedNames, (self.text,)


def pack_names(items):
    """``items`` for a pickle: a :class:`PackedNames` when ``items`` is a list of at least ``_MIN_ITEMS``
    strings none of which holds the separator, else ``items`` itself."""
    if type(items) is not list or len(items) < _MIN_ITEMS:
        return items
    try:
        text = _SEP.join(items)
    except TypeError:  # not all strings
        return items
    if text.count(_SEP) != len(items) - 1:  # a name holding the separator
        return items
    return PackedNames(text)


def unpack_names(packed):
    """The list :func:`pack_names` packed (anything else is returned as it is)."""
    if type(packed) is PackedNames:
        return packed.text.split(_SEP)
    return packed
