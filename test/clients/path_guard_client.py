#!/usr/bin/env python3
"""A caller in another language, as users write them: pipe JSON through path-guard.

Usage: path_guard_client.py PATH-GUARD-BIN ROOT
Checks that a workspace below ROOT is accepted and that ROOT's parent is refused
with exit 86; prints a one-line verdict and exits 0 only if both hold.
"""
import json
import os
import subprocess
import sys


def guard(binary, path, root, create=False):
    request = json.dumps({"path": path, "root": root, "create": create})
    proc = subprocess.run([binary], input=request, capture_output=True, text=True, check=False)
    return proc.returncode, json.loads(proc.stdout)


def main():
    binary, root = sys.argv[1], sys.argv[2]
    code, answer = guard(binary, os.path.join(root, "workspaces", "py-client"), root, create=True)
    if code != 0 or not answer["ok"] or not answer["resolved"].startswith(answer["root"]):
        print(f"FAIL accepted case: exit {code}: {answer}")
        return 1
    code, answer = guard(binary, os.path.dirname(root), root)
    if code != 86 or answer["ok"] or answer["error"]["code"] != "outside-root":
        print(f"FAIL refused case: exit {code}: {answer}")
        return 1
    print("ok: accepted a workspace, refused the parent with 86")
    return 0


if __name__ == "__main__":
    sys.exit(main())
