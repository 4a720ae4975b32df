"""Retrieve, delete, cancel and input items, driven by the official `openai` SDK against `orspec serve`.

On each store `orspec serve` offers: memory, a SQLite file, and PostgreSQL at `ORSPEC_TEST_POSTGRES`
(default `postgresql://postgres@127.0.0.1:5432/postgres`, as in `test_server_postgres.py`; skipped,
saying why, when nothing answers there); and against a freshly scaffolded provider.
"""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
import openai
import pytest
from openresponses_runtime import client as runtime_client
from openresponses_runtime import models
from orspec.scaffold import scaffold

from ..server_helpers import API_KEY, free_port, served_process

pytestmark = pytest.mark.process

INPUT = [
    {"role": "developer", "content": "Answer briefly."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "First question"}]},
    {"type": "message", "role": "user", "id": "msg_client_given", "content": "Second question"},
]


def _postgres_url() -> str:
    url = os.environ.get("ORSPEC_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL server at {url} (set ORSPEC_TEST_POSTGRES): {str(exc).strip()[:120]}")
    return url


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres", "scaffolded provider"])
def base_url(request, tmp_path_factory):
    port = free_port()
    if request.param == "scaffolded provider":
        project = tmp_path_factory.mktemp("provider")
        scaffold("lifecycle-check", project, force=True)
        command = [sys.executable, "-m", "lifecycle_check", "--port", str(port), "--api-key", API_KEY]
        with served_process(
            [*command, "--store", "memory:"], port=port, env={"PYTHONPATH": str(project / "src")}
        ) as base:
            yield base
        return
    store = {
        "memory": lambda: "memory:",
        "sqlite": lambda: str(tmp_path_factory.mktemp("store") / "responses.sqlite3"),
        "postgres": _postgres_url,
    }[request.param]()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", store]
    with served_process([*command, "--delay", "0"], port=port) as base:
        yield base


@pytest.fixture(scope="module")
def sdk(base_url):
    return openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


@pytest.fixture
def created(sdk):
    return sdk.responses.create(model="demo", input=INPUT)


def test_retrieve_answers_the_stored_response(sdk, created):
    again = sdk.responses.retrieve(created.id)
    assert again.model_dump() == created.model_dump()
    assert again.output_text == created.output_text != ""
    assert sdk.responses.retrieve(created.id, include=["message.output_text.logprobs"]).id == created.id


def test_input_items_list_the_own_input_newest_first_by_default(sdk, created):
    page = sdk.responses.input_items.list(created.id)
    texts = [_text(item) for item in page.data]
    assert texts == ["Second question", "First question", "Answer briefly."]
    assert page.data[0].id == "msg_client_given"  # the client's own id is kept
    assert all(item.type == "message" for item in page.data)
    assert page.first_id == page.data[0].id and page.last_id == page.data[-1].id
    assert page.has_more is False


def test_input_items_page_forward_with_after(sdk, created):
    first = sdk.responses.input_items.list(created.id, order="asc", limit=2)
    assert [_text(i) for i in first.data] == ["Answer briefly.", "First question"]
    assert first.has_more is True
    rest = sdk.responses.input_items.list(created.id, order="asc", limit=2, after=first.last_id)
    assert [_text(i) for i in rest.data] == ["Second question"]
    assert rest.has_more is False
    # The SDK's own paging follows `after` through every page.
    every = [_text(i) for i in sdk.responses.input_items.list(created.id, order="asc", limit=1)]
    assert every == ["Answer briefly.", "First question", "Second question"]


def test_input_items_are_the_turns_own_not_the_inherited(sdk, created):
    follow = sdk.responses.create(model="demo", input="And a third", previous_response_id=created.id)
    page = sdk.responses.input_items.list(follow.id)
    assert [_text(i) for i in page.data] == ["And a third"]
    assert page.data[0].id.startswith(follow.id)


def test_delete_removes_the_response_and_its_input(sdk, created):
    deleted = sdk.responses.delete(created.id)
    assert deleted is None  # the SDK discards the body; the raw answer is checked below
    for call in (sdk.responses.retrieve, sdk.responses.input_items.list, sdk.responses.delete):
        with pytest.raises(openai.NotFoundError) as info:
            call(created.id)
        assert info.value.body["code"] == "response_not_found"
        assert info.value.body["param"] == "response_id"
    with pytest.raises(openai.NotFoundError) as info:
        sdk.responses.create(model="demo", input="more", previous_response_id=created.id)
    assert info.value.body["param"] == "previous_response_id"


def test_delete_answers_the_deleted_object(sdk, base_url, created):
    answer = httpx.delete(f"{base_url}/responses/{created.id}", headers=_auth())
    assert answer.status_code == 200
    assert answer.json() == {"id": created.id, "object": "response.deleted", "deleted": True}


def test_cancel_of_a_finished_response_is_refused(sdk, created):
    with pytest.raises(openai.BadRequestError) as info:
        sdk.responses.cancel(created.id)
    assert info.value.body["code"] == "response_not_cancellable"
    assert info.value.body["param"] == "response_id"
    assert "background: true" in info.value.body["message"]
    assert sdk.responses.retrieve(created.id).status == "completed"  # untouched
    with pytest.raises(openai.NotFoundError):
        sdk.responses.cancel("resp_never_made")


def test_resuming_a_foreground_response_is_refused(sdk, created):
    with pytest.raises(openai.BadRequestError) as info:
        sdk.responses.retrieve(created.id, stream=True, starting_after=3)
    assert (info.value.body["code"], info.value.body["param"]) == ("response_not_resumable", "stream")
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve("resp_never_made", stream=True)


def test_async_sdk_drives_every_operation(base_url):
    async def main():
        client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
        created = await client.responses.create(model="demo", input=INPUT)
        assert (await client.responses.retrieve(created.id)).id == created.id
        items = [_text(i) async for i in client.responses.input_items.list(created.id, order="asc", limit=2)]
        assert items == ["Answer briefly.", "First question", "Second question"]
        with pytest.raises(openai.BadRequestError):
            await client.responses.cancel(created.id)
        await client.responses.delete(created.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(created.id)
        await client.close()

    asyncio.run(main())


def test_generated_client_drives_every_operation(base_url):
    with runtime_client.Client(base_url=base_url, api_key=API_KEY, max_retries=0) as client:
        created = client.responses.create(model="demo", input=INPUT)
        again = client.responses.retrieve(created.id, include=[models.IncludeEnum.message_output_text_logprobs])
        assert isinstance(again, models.ResponseResource) and again.id == created.id
        page = client.responses.input_items.list(created.id, order="asc", limit=2)
        assert isinstance(page, models.OpenaiInputItemList)
        assert (len(page.data), page.has_more) == (2, True)
        rest = client.responses.input_items.list(created.id, order="asc", after=page.last_id)
        assert [item.id for item in rest.data] == ["msg_client_given"]
        with pytest.raises(runtime_client.BadRequestError) as info:
            client.responses.input_items.list(created.id, limit=0)
        assert (info.value.code, info.value.param) == ("invalid_value", "limit")
        with pytest.raises(runtime_client.BadRequestError) as info:
            client.responses.cancel(created.id)
        assert info.value.code == "response_not_cancellable"
        deleted = client.responses.delete(created.id)
        assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "response.deleted", True)
        with pytest.raises(runtime_client.NotFoundError) as info:
            client.responses.retrieve(created.id)
        assert info.value.param == "response_id"
        with pytest.raises(runtime_client.BadRequestError) as info:
            client.responses.retrieve("not an id?")  # escaped into the path, and refused as no id
        assert info.value.param == "response_id"


def test_generated_async_client_drives_every_operation(base_url):
    async def main():
        async with runtime_client.AsyncClient(base_url=base_url, api_key=API_KEY, max_retries=0) as client:
            created = await client.responses.create(model="demo", input=INPUT)
            assert (await client.responses.retrieve(created.id)).id == created.id
            page = await client.responses.input_items.list(created.id)
            assert [item.id for item in page.data][0] == "msg_client_given"
            with pytest.raises(runtime_client.BadRequestError):
                await client.responses.cancel(created.id)
            assert (await client.responses.delete(created.id)).deleted is True
            with pytest.raises(runtime_client.NotFoundError):
                await client.responses.input_items.list(created.id)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("path", "status", "code", "param", "says"),
    [
        ("/responses/resp_never_made", 404, "response_not_found", "response_id", "No stored response"),
        ("/responses/bad%20id!", 400, "invalid_value", "response_id", "is not a response id"),
        ("/responses/{id}?stream=true", 400, "response_not_resumable", "stream", "background: true"),
        ("/responses/resp_never_made?stream=true", 404, "response_not_found", "response_id", "No stored response"),
        ("/responses/{id}?stream=maybe", 400, "invalid_value", "stream", "`stream` must be `true` or `false`"),
        (
            "/responses/{id}?starting_after=-1",
            400,
            "invalid_value",
            "starting_after",
            "integer from 0 to 9007199254740992",
        ),
        ("/responses/{id}?include[]=everything", 400, "invalid_value", "include", "Unknown `include` value"),
        ("/responses/{id}/input_items?limit=0", 400, "invalid_value", "limit", "integer from 1 to 100"),
        ("/responses/{id}/input_items?limit=101", 400, "invalid_value", "limit", "integer from 1 to 100"),
        ("/responses/{id}/input_items?limit=ten", 400, "invalid_value", "limit", "not 'ten'"),
        ("/responses/{id}/input_items?limit=1&limit=2", 400, "invalid_value", "limit", "given 2 times"),
        ("/responses/{id}/input_items?order=up", 400, "invalid_value", "order", "`asc` or `desc`"),
        ("/responses/{id}/input_items?after=msg_elsewhere", 400, "invalid_value", "after", "not an input item"),
        ("/responses/resp_never_made/input_items", 404, "response_not_found", "response_id", "No stored response"),
    ],
)
def test_bad_input_gets_the_error_object_with_param(sdk, base_url, created, path, status, code, param, says):
    answer = httpx.get(base_url + path.format(id=created.id), headers=_auth())
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert says in error["message"]
    assert "\n" not in error["message"]


def test_a_cursor_from_another_response_is_refused(sdk, base_url, created):
    other = sdk.responses.create(model="demo", input="Elsewhere")
    cursor = sdk.responses.input_items.list(other.id).last_id
    with pytest.raises(openai.BadRequestError) as info:
        sdk.responses.input_items.list(created.id, after=cursor)
    assert info.value.body["param"] == "after"
    assert created.id in info.value.body["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/responses/{id}"),
        ("DELETE", "/responses/{id}"),
        ("POST", "/responses/{id}/cancel"),
        ("GET", "/responses/{id}/input_items"),
    ],
)
def test_every_operation_needs_the_key(base_url, created, method, path):
    answer = httpx.request(method, base_url + path.format(id=created.id))
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "missing_api_key"


def test_a_large_starting_after_is_taken(base_url, created):
    answer = httpx.get(f"{base_url}/responses/{created.id}?starting_after=5548923694069", headers=_auth())
    assert answer.status_code == 200  # a valid integer, however large; only streaming would read it


@pytest.mark.parametrize(("path", "allowed"), [("/responses/{id}", "DELETE, GET"), ("/responses/{id}/cancel", "POST")])
def test_a_wrong_method_names_every_method_of_the_path(base_url, created, path, allowed):
    answer = httpx.request("PUT", base_url + path.format(id=created.id), headers=_auth())
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "method_not_allowed"
    assert answer.headers["allow"] == allowed


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {API_KEY}"}


def _text(item) -> str:
    content = item.content
    return content if isinstance(content, str) else content[0].text
