from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import DATA
from twinforge.core.exceptions import ConfigError
from twinforge.core.settings import load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "twinforge.toml"
    path.write_text(text)
    return path


def test_contract_keys_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[models.generator]
provider = "openai-compatible"
base_url = "http://127.0.0.1:9999/v1"
model = "local"
api_key_env = "MY_KEY"
structured_output = "json_object"
[models.reviewer]
provider = "anthropic"
model = "claude-x"
[triage]
keep = 25
review_min = 19
""",
    )
    config = load_config(path)
    assert config.models.generator.base_url == "http://127.0.0.1:9999/v1"
    assert config.models.generator.api_key_env == "MY_KEY"
    assert config.models.generator.structured_output == "json_object"
    assert config.models.reviewer.provider == "anthropic"
    assert config.models.reviewer.endpoint() is None
    assert config.models.implementer.endpoint() == "http://127.0.0.1:8080/v1"
    assert (config.triage.keep, config.triage.review_min) == (25, 19)


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '[models.reviewer]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "a"\n')
    monkeypatch.setenv("TWINFORGE_MODELS__REVIEWER__BASE_URL", "http://127.0.0.1:2/v1")
    config = load_config(path)
    assert config.models.reviewer.base_url == "http://127.0.0.1:2/v1"
    assert config.models.reviewer.model == "a"


def test_bad_toml_names_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[models.generator\nprovider=")
    with pytest.raises(ConfigError, match="twinforge.toml: not valid TOML"):
        load_config(path)


def test_bad_field_names_field(tmp_path: Path) -> None:
    path = write(tmp_path, '[models.reviewer]\nstructured_output = "xml"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.field == "models.reviewer.structured_output"
    assert "twinforge.toml" in str(info.value)


def test_unknown_key_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "[triage]\nkeepp = 3\n")
    with pytest.raises(ConfigError, match=r"triage\.keepp"):
        load_config(path)


def test_triage_order_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "[triage]\nkeep = 10\nreview_min = 20\n")
    with pytest.raises(ConfigError, match="must not exceed"):
        load_config(path)


def test_scripted_needs_script_and_resolves_relative(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="script"):
        load_config(write(tmp_path, '[models.generator]\nprovider = "scripted"\n'))
    config = load_config(write(tmp_path, '[models.generator]\nprovider = "scripted"\nscript = "s.yaml"\n'))
    assert config.models.generator.script == tmp_path / "s.yaml"


def test_bad_environment_value_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "[triage]\nkeep = 24\n")
    monkeypatch.setenv("TWINFORGE_MODELS__REVIEWER__CONCURRENCY", "abc")
    with pytest.raises(ConfigError, match="TWINFORGE_MODELS__REVIEWER__CONCURRENCY") as info:
        load_config(path)
    assert info.value.path is None


def test_unparsable_environment_json_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_MODELS", "notjson")
    with pytest.raises(ConfigError, match="environment variable"):
        load_config(write(tmp_path, ""))


def test_non_utf8_config(tmp_path: Path) -> None:
    path = tmp_path / "twinforge.toml"
    path.write_bytes(b"[triage]\nkeep = 24 # \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)


KEY = "sk-proj-FAKEFAKE0000aaaa1111bbbb2222cccc3333dddd"  # the pasted key of cases/key-in-env-name


def all_text(exc: BaseException) -> str:
    """The error and everything chained to it, as a traceback would print them."""
    parts = []
    while exc is not None:
        parts.append(f"{exc!s} {exc!r}")
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return " ".join(parts)


def test_key_pasted_as_env_name_refused_at_load_never_printed() -> None:
    path = DATA / "key-in-env-name" / "twinforge.toml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "models.reviewer.api_key_env: not an environment variable name" in str(info.value)
    assert KEY not in all_text(info.value) and "FAKEFAKE" not in all_text(info.value)


def test_key_pasted_into_the_environment_override_not_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_MODELS__GENERATOR__API_KEY_ENV", KEY)
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, ""))
    assert "TWINFORGE_MODELS__GENERATOR__API_KEY_ENV" in str(info.value)
    assert "not an environment variable name" in str(info.value)
    assert "FAKEFAKE" not in all_text(info.value)


@pytest.mark.parametrize("name", ["TWINFORGE_API_KEY", "_X", "openai_key2"])
def test_env_names_accepted(tmp_path: Path, name: str) -> None:
    assert (
        load_config(write(tmp_path, f'[models.reviewer]\napi_key_env = "{name}"\n')).models.reviewer.api_key_env == name
    )


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8080/v1", "localhost:8080/v1", "ftp://127.0.0.1/v1", "http://", "/v1", "http//127.0.0.1/v1"]
)
def test_base_url_must_be_http_refused_at_load_naming_the_field(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError, match=r"field models.generator.base_url: .*not an http\(s\) URL"):
        load_config(write(tmp_path, f'[models.generator]\nbase_url = "{url}"\n'))


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://127.0.0.1/v1", "HTTP://[::1]:9000"])
def test_http_urls_accepted_unchanged(tmp_path: Path, url: str) -> None:
    assert load_config(write(tmp_path, f'[models.generator]\nbase_url = "{url}"\n')).models.generator.base_url == url


def test_roles_on_the_embedded_server_send_as_many_requests_as_it_has_slots(tmp_path: Path) -> None:
    from twinforge.core.processes import machine_slots
    from twinforge.core.workspace import Workspace

    config = Workspace.init(tmp_path / "ws", port=8111).config
    assert config.models.generator.concurrency is None  # init leaves it to the server's slots
    assert config.local_model.slot_count() == machine_slots() >= 4
    for role in (config.models.generator, config.models.reviewer, config.models.calibration):
        assert config.serves_embedded(role) and config.concurrency(role) == config.local_model.slot_count()
    assert config.calibration_workers() == config.local_model.slot_count()
    config.local_model.slots = 6
    assert config.concurrency(config.models.reviewer) == 6 and config.calibration_workers() == 6
    config.models.reviewer.concurrency = 2  # a role's own value wins
    assert config.concurrency(config.models.reviewer) == 2
    config.calibration.workers = 3
    assert config.calibration_workers() == 3
    config.models.generator.base_url = "http://127.0.0.1:9000/v1"  # another server: no slots known
    assert not config.serves_embedded(config.models.generator) and config.concurrency(config.models.generator) == 4
    script = tmp_path / "script.yaml"
    script.write_text("[]")
    scripted = config.models.generator.model_copy(update={"provider": "scripted", "script": script})
    assert config.concurrency(scripted) == 1  # a script replays its replies in arrival order
    assert machine_slots(2) == 4 and machine_slots(8) == 8 and machine_slots(64) == 16


def test_the_embedded_server_serves_every_api_shape_another_endpoint_chat_unless_listed(tmp_path: Path) -> None:
    from twinforge.core.workspace import Workspace

    config = Workspace.init(tmp_path / "ws", port=8111).config
    local = config.with_api_shapes(config.models.calibration)
    assert local.api_shapes == ["chat", "responses", "messages"] and config.models.calibration.api_shapes is None
    hosted = config.models.calibration.model_copy(update={"base_url": "http://127.0.0.1:9000/v1"})
    assert config.with_api_shapes(hosted).api_shapes == ["chat"] and hosted.served_shapes() == ["chat"]
    hosted.api_shapes = ["messages"]  # a block's own list wins, for the embedded server too
    assert config.with_api_shapes(hosted).api_shapes == ["messages"]
    assert config.with_api_shapes(local.model_copy(update={"api_shapes": ["chat"]})).api_shapes == ["chat"]


def test_a_model_blocks_reasoning_price_and_api_and_the_spend_ceiling_load(tmp_path: Path) -> None:
    (tmp_path / "twinforge.toml").write_text(
        "[models.calibration]\nprovider = 'openai'\nmodel = 'gpt-x'\nreasoning_effort = 'high'\n"
        "[models.calibration.price]\ninput = 1.25\ncached_input = 0.125\noutput = 10.0\n"
        "[models.implementer]\nprovider = 'anthropic'\nthinking_budget = 2048\nopenai_api = 'chat'\n"
        "[spend]\nceiling_usd = 25.0\n"
    )
    config = load_config(tmp_path / "twinforge.toml")
    calibration = config.models.calibration
    assert calibration.reasoning_effort == "high" and calibration.harness_api() == "responses"
    assert calibration.price is not None
    # 1,000 prompt tokens of which 400 cached, 100 completion tokens: (600 x 1.25 + 400 x 0.125 + 100 x 10) / 1e6
    assert calibration.price.cost(1000, 400, 100) == pytest.approx((600 * 1.25 + 400 * 0.125 + 100 * 10.0) / 1e6)
    assert config.models.implementer.thinking_budget == 2048 and config.models.implementer.harness_api() == "chat"
    assert config.spend.ceiling_usd == 25.0
    (tmp_path / "twinforge.toml").write_text("[models.calibration]\nthinking_budget = 100\n")
    with pytest.raises(ConfigError, match="thinking_budget"):
        load_config(tmp_path / "twinforge.toml")
