"""The file stores: OpenAI's file objects, scoped by tenant, written atomically.

The contract tests run against every ``FileStore``: ``DirectoryFileStore`` on a
temporary directory and ``S3FileStore`` on moto's S3. What is particular to S3
is in ``test_s3_files.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serving.conftest import FILES_BUCKET
from tokenplane.serving.errors import NotFound
from tokenplane.serving.files.s3 import S3FileStore
from tokenplane.serving.files.store import DirectoryFileStore, FileStore, page

DATA = b'{"custom_id": "a"}\n'


@pytest.fixture(params=["directory", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileStore:
    if request.param == "s3":
        return S3FileStore(request.getfixturevalue("s3"), FILES_BUCKET)
    return DirectoryFileStore(tmp_path / "files")


async def test_a_stored_file_is_an_openai_file_object(store: FileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    assert obj["id"].startswith("file-") and len(obj["id"]) == 5 + 32
    assert (obj["object"], obj["bytes"], obj["filename"], obj["purpose"]) == (
        "file",
        len(DATA),
        "requests.jsonl",
        "batch",
    )
    assert isinstance(obj["created_at"], int)
    assert await store.get("demo", obj["id"]) == obj


async def test_content_reads_back_the_bytes_stored(store: FileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    assert await store.content("demo", obj["id"]) == DATA


async def test_another_tenants_file_is_not_found(store: FileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound) as caught:
            await read("acme-eu", obj["id"])
        assert caught.value.status == 404 and obj["id"] in caught.value.message
    assert await store.content("demo", obj["id"]) == DATA


async def test_a_file_id_that_is_a_path_is_not_found(store: FileStore) -> None:
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound):
            await read("demo", "../acme-eu/file-0")


async def test_a_well_formed_id_that_was_never_stored_is_not_found(store: FileStore) -> None:
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound) as caught:
            await read("demo", "file-" + "0" * 32)
        assert caught.value.code == "file_not_found"


async def test_a_deleted_file_is_gone(store: FileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    assert await store.delete("demo", obj["id"]) == {"id": obj["id"], "object": "file", "deleted": True}
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound):
            await read("demo", obj["id"])


async def test_files_live_under_their_tenants_folder_without_temporary_leftovers(tmp_path: Path) -> None:
    store = DirectoryFileStore(tmp_path / "files")
    obj = await store.put("demo", "batch_output", "out.jsonl", DATA)
    names = sorted(p.name for p in (tmp_path / "files" / "demo").iterdir())
    assert names == [f"{obj['id']}.data", f"{obj['id']}.json"]
    assert json.loads((tmp_path / "files" / "demo" / f"{obj['id']}.json").read_text())["purpose"] == "batch_output"


async def test_an_unknown_purpose_is_refused(store: FileStore) -> None:
    with pytest.raises(ValueError, match="purpose 'fine-tune'"):
        await store.put("demo", "fine-tune", "x.jsonl", DATA)


async def test_a_tenant_that_is_not_a_spec_name_is_refused(store: FileStore) -> None:
    with pytest.raises(ValueError, match="not a spec tenant name"):
        await store.put("../demo", "batch", "x.jsonl", DATA)
    with pytest.raises(ValueError, match="not a spec tenant name"):
        await store.get("Demo/..", "file-" + "0" * 32)


async def test_a_long_filename_is_cut_to_the_limit(store: FileStore) -> None:
    obj = await store.put("demo", "batch", "x" * 300 + ".jsonl", DATA)
    assert obj["filename"] == "x" * 255 and (await store.get("demo", obj["id"]))["filename"] == "x" * 255


async def test_a_listing_is_the_tenants_own_files_newest_first_in_pages(store: FileStore) -> None:
    ids = []
    for i in range(5):
        obj = await store.put("demo", "batch", f"in-{i}.jsonl", DATA)
        obj["created_at"] = i  # distinct times, whatever the clock's resolution
        ids.append(obj["id"])
    await store.put("acme-eu", "batch", "theirs.jsonl", DATA)
    objects = await store.objects("demo")
    assert sorted(o["id"] for o in objects) == sorted(ids)
    for o in objects:  # the order under test is the page's: give each the creation order of its upload
        o["created_at"] = ids.index(o["id"])
    first, more = page(objects, limit=2, after=None, purpose=None)
    assert [o["id"] for o in first] == [ids[4], ids[3]] and more
    rest, more = page(objects, limit=10, after=first[-1]["id"], purpose=None)
    assert [o["id"] for o in rest] == [ids[2], ids[1], ids[0]] and not more
    assert page(objects, limit=10, after=None, purpose="batch_output") == ([], False)


@dataclass
class OneSecond:
    """A clock inside one second, a millisecond on at each reading: every upload has the same created_at."""

    now: float = 1_790_000_000.0

    def time(self) -> float:
        self.now += 0.001
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.mark.parametrize("backend", ["directory", "s3"])
async def test_files_uploaded_within_one_second_list_newest_first(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store: FileStore = (
        S3FileStore(request.getfixturevalue("s3"), FILES_BUCKET, clock=OneSecond())
        if backend == "s3"
        else DirectoryFileStore(tmp_path / "files", clock=OneSecond())
    )
    ids = [(await store.put("demo", "batch", f"in-{i}.jsonl", DATA))["id"] for i in range(20)]
    objects = await store.objects("demo")
    assert len({o["created_at"] for o in objects}) == 1
    listed, more = page(objects, limit=20, after=None, purpose=None)
    assert [o["id"] for o in listed] == ids[::-1] and not more
