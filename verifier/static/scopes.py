"""Names to what is known of them, scoped as the walk meets functions and classes.

Every value tracker keeps the same shape: a map per open function (the module's first), and for
`self.<attr>` names a map per open class, which the class's methods share. A lookup reads the
innermost function outwards; `self.` names read their class.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class ScopedNames(Generic[T]):
    def __init__(self) -> None:
        self._functions: list[dict[str, T | None]] = [{}]
        self._classes: list[dict[str, T | None]] = []

    def enter_function(self) -> None:
        self._functions.append({})

    def leave_function(self) -> None:
        self._functions.pop()

    def enter_class(self) -> None:
        self._classes.append({})

    def leave_class(self) -> None:
        self._classes.pop()

    def set(self, name: str, value: T | None) -> None:
        """Bind `name`; None is kept, so a local rebinding hides what an outer scope says."""
        self._scope_of(name)[name] = value

    def forget(self, name: str) -> None:
        """Drop `name` from its scope: an outer scope's value shows through again."""
        self._scope_of(name).pop(name, None)

    def lookup(self, name: str) -> T | None:
        if name.startswith("self.") and self._classes:
            return self._classes[-1].get(name)
        for scope in reversed(self._functions):
            if name in scope:
                return scope[name]
        return None

    def _scope_of(self, name: str) -> dict[str, T | None]:
        return self._classes[-1] if name.startswith("self.") and self._classes else self._functions[-1]
