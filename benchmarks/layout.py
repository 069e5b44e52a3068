"""The package's layout in figures: modules, lines, top-level modules, function-level imports,
the longest module, and the import graph's edges and depth.

    python benchmarks/layout.py [--package src/pytest_imagetime]
"""

from __future__ import annotations

import argparse
import ast
import functools
from pathlib import Path


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="src/pytest_imagetime", type=Path)
    args = parser.parse_args()
    root: Path = args.package.resolve()
    files = sorted(root.rglob("*.py"))
    modules = {_module_name(root, path): path for path in files}
    lines = {name: len(path.read_text(encoding="utf-8").splitlines())
             for name, path in modules.items()}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    inner_imports = 0  # of our own modules
    inner_all = 0  # of anything: ours, the standard library's, third parties'
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        in_function: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        in_function.add(id(inner))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(name, is_package, node)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            found = {t for t in targets if t in modules and t != name}
            if targets and id(node) in in_function:
                inner_all += 1
            if found and id(node) in in_function:
                inner_imports += 1
            edges[name] |= found
    top_level = [n for n, p in modules.items() if p.parent == root and p.name != "__init__.py"]

    @functools.cache
    def depth(name: str, trail: frozenset[str] = frozenset()) -> int:
        below = [depth(t, trail | {name}) for t in edges[name] if t not in trail]
        return 1 + max(below, default=0)

    longest = max(lines, key=lambda n: lines[n])
    print(f"modules                 {len(modules)}")
    print(f"lines                   {sum(lines.values())}")
    print(f"top-level modules       {len(top_level)}")
    print(f"function-level imports  {inner_all} ({inner_imports} of our own modules)")
    print(f"longest module          {longest} ({lines[longest]} lines)")
    print(f"import edges            {sum(len(v) for v in edges.values())}")
    print(f"import depth (levels)   {max(depth(n) for n in modules)}")
    over_500 = sorted((n for n in lines if lines[n] > 500), key=lambda n: -lines[n])
    print("modules over 500 lines  " + (", ".join(f"{n} ({lines[n]})" for n in over_500) or "none"))


if __name__ == "__main__":
    main()
