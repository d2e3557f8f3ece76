"""textfiles: JSONL lines end at line breaks only (a JSON string may hold U+2028, U+2029 or U+0085 raw, which
str.splitlines cut at), and .tar.gz archives are read member by member, their errors naming archive/member."""
import io
import json
import tarfile

import pytest

from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.textfiles import iter_jsonl, tar_members


def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path):
    recs = [{"q": "uma\u2028linha"}, {"q": "outra\u2029e\x85mais"}, {"q": "fim"}]
    p = tmp_path / "a.jsonl"
    p.write_bytes(("\r\n".join(json.dumps(r, ensure_ascii=False) for r in recs[:2]) + "\r" + json.dumps(recs[2]))
                  .encode("utf-8"))
    assert list(iter_jsonl(p)) == [(1, recs[0]), (2, recs[1]), (3, recs[2])]


def test_tar_members(tmp_path):
    p = tmp_path / "x.tar.gz"
    with tarfile.open(p, "w:gz") as tar:
        for name, data in (("d/a.jsonl", b'{"a": 1}\n'), ("._a.jsonl", b"\x00\x05"), ("__MACOSX/d/b.jsonl", b"\x00"),
                           ("d/notes.txt", b"x"), ("d/b.jsonl", "{\"b\": \"é\"}\n".encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert tar_members(p, ".jsonl") == [(f"{p}/d/a.jsonl", '{"a": 1}\n'), (f"{p}/d/b.jsonl", '{"b": "é"}\n')]
    with tarfile.open(p, "w:gz") as tar:
        info = tarfile.TarInfo("bad.jsonl")
        info.size = 8
        tar.addfile(info, io.BytesIO(b'{"a":\n\xff}'))
    with pytest.raises(DatasetError) as e:
        tar_members(p, ".jsonl")
    assert (e.value.path, e.value.record) == (f"{p}/bad.jsonl", 2) and "undecodable" in e.value.message
    with pytest.raises(DatasetError, match="file not found"):
        tar_members(tmp_path / "missing.tar.gz", ".jsonl")
