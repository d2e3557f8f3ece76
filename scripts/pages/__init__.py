"""The generated parts of the docs and the README, each rendered from committed raw results by a pure function
(raw file(s) in, markdown out). scripts/render_docs.py writes them into their pages between markers;
tests/test_render_docs.py re-renders every page and fails when a committed page differs (a figure typed or left
over, or a raw file changed without rendering)."""
