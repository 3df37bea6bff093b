"""The implement record file: files written before the usage value load unchanged and write back the same keys."""

from __future__ import annotations

import pydantic
import pytest
import yaml

from twinforge.core.llm import Usage
from twinforge.implementer.record import ImplementRecord, RoundRecord

# implementation/<id>.yaml as implement wrote it before calls and tokens were one usage value.
OLD_FILE = """\
schema_version: 1
blueprint_id: S2-R3-a1b2c3d4
pair_id: s2-r3-a1b2c3d4
mode: agent
outcome: impl_failed
reason: 'risk: harm.sh is harmful failed'
provenance: agent:mini-swe-agent
model: openai:capable
prompt_version: ''
rounds:
- n: 1
  failed_checks: ['risk: harm.sh is harmful']
  calls: 12
  prompt_tokens: 4000
  completion_tokens: 300
  seconds: 95.5
  slot_attempts: []
  exit_status: Submitted
  trajectory: null
  gate_calls: 2
  interventions: 1
  recovered: 1
  shadowed: 0
  first_failed: []
- n: 2
  calls: 5
  prompt_tokens: 2000
  completion_tokens: 100
  seconds: 40.0
gate: []
failed_checks: ['risk: harm.sh is harmful']
findings: []
calls: 17
prompt_tokens: 6000
completion_tokens: 400
seconds: 140.25
interventions: 1
recovered: 1
shadowed: 0
observed: true
started_at: 2026-12-01T10:00:00Z
finished_at: 2026-12-01T10:02:20Z
"""


def test_an_implement_record_written_before_the_usage_value_still_loads() -> None:
    data = yaml.safe_load(OLD_FILE)
    record = ImplementRecord.model_validate(data)
    assert record.usage == Usage(calls=17, prompt_tokens=6000, completion_tokens=400)
    assert record.seconds == 140.25  # the blueprint's wall time, not model time
    assert [r.usage.calls for r in record.rounds] == [12, 5]
    assert Usage.total(r.usage for r in record.rounds) == record.usage
    written = record.model_dump(mode="json")
    assert written["calls"] == 17 and written["prompt_tokens"] == 6000 and "usage" not in written
    assert "cached_tokens" not in written  # the file format did not gain a key
    assert set(written["rounds"][1]) == set(RoundRecord(n=2).model_dump())
    assert ImplementRecord.model_validate(written) == record


def test_a_bad_count_in_a_record_names_the_field() -> None:
    data = yaml.safe_load(OLD_FILE)
    data["rounds"][0]["calls"] = -3
    with pytest.raises(pydantic.ValidationError, match=r"rounds\.0\.usage\.calls"):
        ImplementRecord.model_validate(data)
