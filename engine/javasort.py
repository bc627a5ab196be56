"""Java's object sort (``Arrays.sort(T[], Comparator)``, ``List.sort``, ``Stream.sorted``) step for step.

For a comparator that is a total order any stable sort gives Java's result. Pulsar has comparators
that are not: AvgShedder's ``(int)(a - b)`` before 4.0.8 / 4.1.2, and the bundle-stats ``compareTo``
that treated values within a resolution as equal. With those the result depends on exactly which
pairs the sort compares, and Java's TimSort may throw ``IllegalArgumentException: Comparison method
violates its general contract!`` when a merge finds the runs inconsistent. :func:`java_sort` follows
the JDK's TimSort (binary insertion sort below 32 elements; runs, galloping merges and the merge-stack
rules above) so that both the order and the exception come out as on the JVM.

Examples
--------
>>> xs = [3, 1, 2]
>>> java_sort(xs, lambda a, b: (a > b) - (a < b)); xs
[1, 2, 3]
>>> java_int_cast(0.7 - 1.2), java_int_cast(float("nan")), java_int_cast(1e300)
(0, 0, 2147483647)
"""
from __future__ import annotations

import math
from typing import Callable

__all__ = ["java_sort", "java_int_cast", "ContractViolation", "CONTRACT_MESSAGE"]

MIN_MERGE = 32
MIN_GALLOP = 7
CONTRACT_MESSAGE = "Comparison method violates its general contract!"


class ContractViolation(ValueError):
    """Java's ``IllegalArgumentException("Comparison method violates its general contract!")``."""

    def __init__(self):
        super().__init__(CONTRACT_MESSAGE)


def java_int_cast(x: float) -> int:
    """Java's ``(int) x`` of a double: NaN → 0, toward zero, saturating at the int range."""
    if math.isnan(x):
        return 0
    if x >= 2147483647:
        return 2147483647
    if x <= -2147483648:
        return -2147483648
    return int(x)


def java_sort(a: list, c: Callable) -> None:
    """Sort ``a`` in place as ``Arrays.sort(a, c)`` does (``c(x, y)`` returns an int like Java's
    ``compare``); raises :class:`ContractViolation` where the JVM throws."""
    n = len(a)
    if n < 2:
        return
    if n < MIN_MERGE:
        init = _count_run(a, 0, n, c)
        _binary_sort(a, 0, n, init, c)
        return
    ts = _TimSort(a, c)
    min_run = _min_run_length(n)
    lo, remaining = 0, n
    while True:
        run = _count_run(a, lo, n, c)
        if run < min_run:
            force = remaining if remaining <= min_run else min_run
            _binary_sort(a, lo, lo + force, lo + run, c)
            run = force
        ts.push(lo, run)
        ts.merge_collapse()
        lo += run
        remaining -= run
        if remaining == 0:
            break
    ts.merge_force_collapse()


def _min_run_length(n: int) -> int:
    r = 0
    while n >= MIN_MERGE:
        r |= n & 1
        n >>= 1
    return n + r


def _count_run(a, lo, hi, c) -> int:
    run_hi = lo + 1
    if run_hi == hi:
        return 1
    if c(a[run_hi], a[lo]) < 0:
        run_hi += 1
        while run_hi < hi and c(a[run_hi], a[run_hi - 1]) < 0:
            run_hi += 1
        a[lo:run_hi] = a[lo:run_hi][::-1]
    else:
        run_hi += 1
        while run_hi < hi and c(a[run_hi], a[run_hi - 1]) >= 0:
            run_hi += 1
    return run_hi - lo


def _binary_sort(a, lo, hi, start, c) -> None:
    if start == lo:
        start += 1
    while start < hi:
        pivot = a[start]
        left, right = lo, start
        while left < right:
            mid = (left + right) >> 1
            if c(pivot, a[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        a[left + 1:start + 1] = a[left:start]
        a[left] = pivot
        start += 1


def _gallop_left(key, a, base, length, hint, c) -> int:
    last, ofs = 0, 1
    if c(key, a[base + hint]) > 0:
        max_ofs = length - hint
        while ofs < max_ofs and c(key, a[base + hint + ofs]) > 0:
            last = ofs
            ofs = (ofs << 1) + 1
            if ofs > 2147483647:
                ofs = max_ofs
        ofs = min(ofs, max_ofs)
        last += hint
        ofs += hint
    else:
        max_ofs = hint + 1
        while ofs < max_ofs and c(key, a[base + hint - ofs]) <= 0:
            last = ofs
            ofs = (ofs << 1) + 1
            if ofs > 2147483647:
                ofs = max_ofs
        ofs = min(ofs, max_ofs)
        last, ofs = hint - ofs, hint - last
    last += 1
    while last < ofs:
        m = last + ((ofs - last) >> 1)
        if c(key, a[base + m]) > 0:
            last = m + 1
        else:
            ofs = m
    return ofs


def _gallop_right(key, a, base, length, hint, c) -> int:
    last, ofs = 0, 1
    if c(key, a[base + hint]) < 0:
        max_ofs = hint + 1
        while ofs < max_ofs and c(key, a[base + hint - ofs]) < 0:
            last = ofs
            ofs = (ofs << 1) + 1
            if ofs > 2147483647:
                ofs = max_ofs
        ofs = min(ofs, max_ofs)
        last, ofs = hint - ofs, hint - last
    else:
        max_ofs = length - hint
        while ofs < max_ofs and c(key, a[base + hint + ofs]) >= 0:
            last = ofs
            ofs = (ofs << 1) + 1
            if ofs > 2147483647:
                ofs = max_ofs
        ofs = min(ofs, max_ofs)
        last += hint
        ofs += hint
    last += 1
    while last < ofs:
        m = last + ((ofs - last) >> 1)
        if c(key, a[base + m]) < 0:
            ofs = m
        else:
            last = m + 1
    return ofs


class _Break(Exception):
    pass


class _TimSort:
    def __init__(self, a, c):
        self.a, self.c = a, c
        self.min_gallop = MIN_GALLOP
        self.base: list = []
        self.len: list = []

    def push(self, base, length):
        self.base.append(base)
        self.len.append(length)

    def merge_collapse(self):
        L = self.len
        while len(L) > 1:
            n = len(L) - 2
            if (n > 0 and L[n - 1] <= L[n] + L[n + 1]) or (n > 1 and L[n - 2] <= L[n] + L[n - 1]):
                if L[n - 1] < L[n + 1]:
                    n -= 1
            elif n < 0 or L[n] > L[n + 1]:
                break
            self.merge_at(n)

    def merge_force_collapse(self):
        L = self.len
        while len(L) > 1:
            n = len(L) - 2
            if n > 0 and L[n - 1] < L[n + 1]:
                n -= 1
            self.merge_at(n)

    def merge_at(self, i):
        a, c = self.a, self.c
        base1, len1 = self.base[i], self.len[i]
        base2, len2 = self.base[i + 1], self.len[i + 1]
        self.len[i] = len1 + len2
        del self.base[i + 1]
        del self.len[i + 1]
        k = _gallop_right(a[base2], a, base1, len1, 0, c)
        base1 += k
        len1 -= k
        if len1 == 0:
            return
        len2 = _gallop_left(a[base1 + len1 - 1], a, base2, len2, len2 - 1, c)
        if len2 == 0:
            return
        if len1 <= len2:
            self.merge_lo(base1, len1, base2, len2)
        else:
            self.merge_hi(base1, len1, base2, len2)

    def merge_lo(self, base1, len1, base2, len2):
        a, c = self.a, self.c
        tmp = a[base1:base1 + len1]
        c1, c2, dest = 0, base2, base1
        a[dest] = a[c2]
        dest += 1
        c2 += 1
        len2 -= 1
        if len2 == 0:
            a[dest:dest + len1] = tmp[c1:c1 + len1]
            return
        if len1 == 1:
            a[dest:dest + len2] = a[c2:c2 + len2]
            a[dest + len2] = tmp[c1]
            return
        min_gallop = self.min_gallop
        try:
            while True:
                n1 = n2 = 0
                while True:
                    if c(a[c2], tmp[c1]) < 0:
                        a[dest] = a[c2]
                        dest += 1
                        c2 += 1
                        n2 += 1
                        n1 = 0
                        len2 -= 1
                        if len2 == 0:
                            raise _Break
                    else:
                        a[dest] = tmp[c1]
                        dest += 1
                        c1 += 1
                        n1 += 1
                        n2 = 0
                        len1 -= 1
                        if len1 == 1:
                            raise _Break
                    if (n1 | n2) >= min_gallop:
                        break
                while True:
                    n1 = _gallop_right(a[c2], tmp, c1, len1, 0, c)
                    if n1 != 0:
                        a[dest:dest + n1] = tmp[c1:c1 + n1]
                        dest += n1
                        c1 += n1
                        len1 -= n1
                        if len1 <= 1:
                            raise _Break
                    a[dest] = a[c2]
                    dest += 1
                    c2 += 1
                    len2 -= 1
                    if len2 == 0:
                        raise _Break
                    n2 = _gallop_left(tmp[c1], a, c2, len2, 0, c)
                    if n2 != 0:
                        a[dest:dest + n2] = a[c2:c2 + n2]
                        dest += n2
                        c2 += n2
                        len2 -= n2
                        if len2 == 0:
                            raise _Break
                    a[dest] = tmp[c1]
                    dest += 1
                    c1 += 1
                    len1 -= 1
                    if len1 == 1:
                        raise _Break
                    min_gallop -= 1
                    if not (n1 >= MIN_GALLOP or n2 >= MIN_GALLOP):
                        break
                if min_gallop < 0:
                    min_gallop = 0
                min_gallop += 2
        except _Break:
            pass
        self.min_gallop = 1 if min_gallop < 1 else min_gallop
        if len1 == 1:
            a[dest:dest + len2] = a[c2:c2 + len2]
            a[dest + len2] = tmp[c1]
        elif len1 == 0:
            raise ContractViolation()
        else:
            a[dest:dest + len1] = tmp[c1:c1 + len1]

    def merge_hi(self, base1, len1, base2, len2):
        a, c = self.a, self.c
        tmp = a[base2:base2 + len2]
        c1, c2, dest = base1 + len1 - 1, len2 - 1, base2 + len2 - 1
        a[dest] = a[c1]
        dest -= 1
        c1 -= 1
        len1 -= 1
        if len1 == 0:
            a[dest - (len2 - 1):dest + 1] = tmp[0:len2]
            return
        if len2 == 1:
            dest -= len1
            c1 -= len1
            a[dest + 1:dest + 1 + len1] = a[c1 + 1:c1 + 1 + len1]
            a[dest] = tmp[c2]
            return
        min_gallop = self.min_gallop
        try:
            while True:
                n1 = n2 = 0
                while True:
                    if c(tmp[c2], a[c1]) < 0:
                        a[dest] = a[c1]
                        dest -= 1
                        c1 -= 1
                        n1 += 1
                        n2 = 0
                        len1 -= 1
                        if len1 == 0:
                            raise _Break
                    else:
                        a[dest] = tmp[c2]
                        dest -= 1
                        c2 -= 1
                        n2 += 1
                        n1 = 0
                        len2 -= 1
                        if len2 == 1:
                            raise _Break
                    if (n1 | n2) >= min_gallop:
                        break
                while True:
                    n1 = len1 - _gallop_right(tmp[c2], a, base1, len1, len1 - 1, c)
                    if n1 != 0:
                        dest -= n1
                        c1 -= n1
                        len1 -= n1
                        a[dest + 1:dest + 1 + n1] = a[c1 + 1:c1 + 1 + n1]
                        if len1 == 0:
                            raise _Break
                    a[dest] = tmp[c2]
                    dest -= 1
                    c2 -= 1
                    len2 -= 1
                    if len2 == 1:
                        raise _Break
                    n2 = len2 - _gallop_left(a[c1], tmp, 0, len2, len2 - 1, c)
                    if n2 != 0:
                        dest -= n2
                        c2 -= n2
                        len2 -= n2
                        a[dest + 1:dest + 1 + n2] = tmp[c2 + 1:c2 + 1 + n2]
                        if len2 <= 1:
                            raise _Break
                    a[dest] = a[c1]
                    dest -= 1
                    c1 -= 1
                    len1 -= 1
                    if len1 == 0:
                        raise _Break
                    min_gallop -= 1
                    if not (n1 >= MIN_GALLOP or n2 >= MIN_GALLOP):
                        break
                if min_gallop < 0:
                    min_gallop = 0
                min_gallop += 2
        except _Break:
            pass
        self.min_gallop = 1 if min_gallop < 1 else min_gallop
        if len2 == 1:
            dest -= len1
            c1 -= len1
            a[dest + 1:dest + 1 + len1] = a[c1 + 1:c1 + 1 + len1]
            a[dest] = tmp[c2]
        elif len2 == 0:
            raise ContractViolation()
        else:
            a[dest - (len2 - 1):dest + 1] = tmp[0:len2]
