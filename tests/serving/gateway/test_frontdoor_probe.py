"""The second probe: an attacker with a key and a user of the current openai client, against the real stack.

One stack (engines, the model gateway process, Redis, the Kafka-protocol broker, the gateway under
uvicorn) answers every check; each check is the request the probe sent and the bounded answer it must get.
The head limits (431) have their own tests on the gateway's own protocol (test_gateway_head_limits.py),
the cut streams theirs against the broker (test_metering_cuts.py), the batch fairness and the Files API
limits theirs against the workers (test_batch_e2e.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.serving.conftest import Broker
from tests.serving.platform import KEY_OF, Platform, platform
from tokenplane.serving import jsonbody
from tokenplane.spec import PlatformSpec

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def dev(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Platform]:
    async with platform(dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool") as p:
        yield p


async def post(p: Platform, tenant_key: str, body: bytes, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(
            p.url + "/v1/chat/completions",
            # As bytes, as a raw client sends them: a header value is latin-1 on the wire (0xA0 is the NBSP).
            headers={
                b"authorization": f"Bearer {tenant_key}".encode("latin-1"),
                b"content-type": b"application/json",
                **{k.encode(): v.encode("latin-1") for k, v in headers.items()},
            },
            content=body,
        )


async def test_the_front_door_probe(dev: Platform) -> None:
    demo = dev.client("demo")

    # 1. 2 MiB of nested empty arrays from free, for a tier it may not use: refused by its cost, undecoded.
    nested = (
        b'{"model": "large", "messages": [{"role": "user", "content": "x"}], "x": ['
        + b",".join([b"[]"] * (2 * 1024 * 1024 // 3))
        + b"]}"
    )
    refused = await post(dev, KEY_OF["free"], nested)
    assert refused.status_code == 400
    assert f"at most {jsonbody.MAX_CONTAINERS}" in refused.json()["error"]["message"]
    ok = await demo.chat.completions.create(model="small", messages=MESSAGES, max_tokens=5)  # type: ignore[arg-type]
    assert ok.choices[0].message.content

    # 2. x-tokenplane-timeout-ms of 0 or below is the client's mistake, not the backend's 504.
    for value in ("0", "-5000"):
        r = await post(
            dev,
            KEY_OF["demo"],
            jsonbody.dumps({"model": "small", "messages": MESSAGES}),
            **{"x-tokenplane-timeout-ms": value},
        )
        assert r.status_code == 400 and r.json()["error"]["param"] == "x-tokenplane-timeout-ms"

    # 3. Nonsense parameters are a 400 naming them, through the official client.
    for extra, param in [
        ({"logprobs": "yes"}, "logprobs"),
        ({"logprobs": True, "top_logprobs": 1000}, "top_logprobs"),
        ({"stop": 5}, "stop"),
        ({"tools": "f"}, "tools"),
    ]:
        with pytest.raises(openai.BadRequestError) as bad:
            await demo.chat.completions.create(model="small", messages=MESSAGES, extra_body=extra)  # type: ignore[arg-type]
        assert bad.value.param == param

    # 4. A 64 KB model name is refused without being echoed whole.
    r = await post(dev, KEY_OF["demo"], jsonbody.dumps({"model": "m" * 65536, "messages": MESSAGES}))
    assert r.status_code == 400 and len(r.content) < 1024

    # 5. A key followed by a non-breaking space is another key.
    r = await post(dev, KEY_OF["demo"] + "\xa0", jsonbody.dumps({"model": "small", "messages": MESSAGES}))
    assert r.status_code == 401

    # 6. The surface the current client uses.
    assert (await demo.models.retrieve("small")).id == "small"
    with pytest.raises(openai.NotFoundError):
        await demo.models.retrieve("gpt-9")
    embed_model = dev.spec.model(dev.spec.pool("embed").model).name
    with pytest.raises(openai.BadRequestError) as dims:
        await demo.embeddings.create(model=embed_model, input="hello", dimensions=64)
    assert "dimensions" in dims.value.message
    with pytest.raises(openai.BadRequestError) as ids:
        await demo.completions.create(model="small", prompt=[1, 2, 3], max_tokens=5)
    assert ids.value.code == "token_ids_not_supported"
