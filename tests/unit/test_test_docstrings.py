"""Every test function says in its docstring what it shows, so a failure names what broke."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def undocumented_tests(root: Path = TESTS) -> list[str]:
    """``file:line name`` of each test function (``test*``, module level or in a class) under
    ``root`` without a docstring."""
    missing = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
                    and not (ast.get_docstring(node) or "").strip()):
                missing.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return missing


@pytest.mark.slow
def test_every_test_function_has_a_docstring() -> None:
    """No test function under tests/ lacks a one-line docstring saying what it shows."""
    missing = undocumented_tests()
    assert not missing, "test functions without a docstring:\n" + "\n".join(missing)


def test_the_scan_finds_a_test_without_a_docstring(tmp_path: Path) -> None:
    """The scan reports a module-level and a method test without a docstring, and passes documented ones."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        'def test_bare():\n    pass\n\n\ndef test_told():\n    """Says."""\n\n\n'
        "class TestC:\n    async def test_method(self):\n        pass\n", encoding="utf-8")
    assert undocumented_tests(tmp_path / "tests") == ["tests/test_x.py:1 test_bare", "tests/test_x.py:10 test_method"]
