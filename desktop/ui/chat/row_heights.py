"""Row heights in a Fenwick tree: top of a row, row at a y, one row resized, all in O(log N)."""

from __future__ import annotations


class RowHeights:
    """Heights of a list's rows, summed so that no operation but `reset` walks every row."""

    __slots__ = ("_heights", "_total", "_tree")

    def __init__(self) -> None:
        self._heights: list[int] = []
        self._tree: list[int] = [0]  # 1-based Fenwick tree of the heights
        self._total = 0

    def __len__(self) -> int:
        return len(self._heights)

    @property
    def total(self) -> int:
        """Height of all rows together."""
        return self._total

    def reset(self, heights: list[int]) -> None:
        """Replace every row (O(N), the tree is built in place)."""
        self._heights = list(heights)
        tree = [0, *self._heights]
        n = len(tree)
        for i in range(1, n):
            j = i + (i & -i)
            if j < n:
                tree[j] += tree[i]
        self._tree = tree
        self._total = sum(self._heights)

    def append(self, height: int) -> None:
        """Add a row at the end."""
        self._heights.append(height)
        i = len(self._heights)
        # Node i covers rows (i - lowbit(i), i]: its own height plus the nodes below it.
        node = height
        low = i & -i
        k = i - 1
        while k > i - low:
            node += self._tree[k]
            k -= k & -k
        self._tree.append(node)
        self._total += height

    def height(self, row: int) -> int:
        """Height of one row."""
        return self._heights[row]

    def set(self, row: int, height: int) -> int:
        """Change one row's height; returns the change (0: nothing moved)."""
        delta = height - self._heights[row]
        if delta:
            self._heights[row] = height
            self._total += delta
            i = row + 1
            n = len(self._tree)
            while i < n:
                self._tree[i] += delta
                i += i & -i
        return delta

    def top(self, row: int) -> int:
        """Sum of the heights of the rows above `row`."""
        s = 0
        i = min(row, len(self._heights))
        while i > 0:
            s += self._tree[i]
            i -= i & -i
        return s

    def row_at(self, y: int) -> int:
        """The row covering `y` (clamped to the first and last row); -1 when empty."""
        n = len(self._heights)
        if n == 0:
            return -1
        if y < 0:
            return 0
        pos = 0
        rest = y
        step = 1 << n.bit_length()
        while step:
            nxt = pos + step
            if nxt <= n and self._tree[nxt] <= rest:
                pos = nxt
                rest -= self._tree[nxt]
            step >>= 1
        return min(pos, n - 1)
