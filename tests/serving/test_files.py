"""DirectoryFileStore: OpenAI's file objects, scoped by tenant, written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serving.errors import NotFound
from serving.gateway.files import DirectoryFileStore

DATA = b'{"custom_id": "a"}\n'


@pytest.fixture
def store(tmp_path: Path) -> DirectoryFileStore:
    return DirectoryFileStore(tmp_path / "files")


async def test_a_stored_file_is_an_openai_file_object(store: DirectoryFileStore) -> None:
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


async def test_content_reads_back_the_bytes_stored(store: DirectoryFileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    assert await store.content("demo", obj["id"]) == DATA


async def test_another_tenants_file_is_not_found(store: DirectoryFileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound) as caught:
            await read("acme-eu", obj["id"])
        assert caught.value.status == 404 and obj["id"] in caught.value.message
    assert await store.content("demo", obj["id"]) == DATA


async def test_a_file_id_that_is_a_path_is_not_found(store: DirectoryFileStore) -> None:
    with pytest.raises(NotFound):
        await store.get("demo", "../acme-eu/file-0")


async def test_a_deleted_file_is_gone(store: DirectoryFileStore) -> None:
    obj = await store.put("demo", "batch", "requests.jsonl", DATA)
    assert await store.delete("demo", obj["id"]) == {"id": obj["id"], "object": "file", "deleted": True}
    with pytest.raises(NotFound):
        await store.content("demo", obj["id"])


async def test_files_live_under_their_tenants_folder_without_temporary_leftovers(
    store: DirectoryFileStore, tmp_path: Path
) -> None:
    obj = await store.put("demo", "batch_output", "out.jsonl", DATA)
    names = sorted(p.name for p in (tmp_path / "files" / "demo").iterdir())
    assert names == [f"{obj['id']}.data", f"{obj['id']}.json"]
    assert json.loads((tmp_path / "files" / "demo" / f"{obj['id']}.json").read_text())["purpose"] == "batch_output"


async def test_an_unknown_purpose_is_refused(store: DirectoryFileStore) -> None:
    with pytest.raises(ValueError, match="purpose 'fine-tune'"):
        await store.put("demo", "fine-tune", "x.jsonl", DATA)
