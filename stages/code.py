"""DVC stage `code`: each stage script's import closure and its digest, one manifest per script in artifacts/code."""

import argparse

from arena.pipeline.stage import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="artifacts/code")
    args = parser.parse_args()
    from arena.pipeline.deps import write_manifests

    write_manifests(args.out)


if __name__ == "__main__":
    run(main)
