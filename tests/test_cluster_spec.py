import pytest

from shockwave_gym.cluster import TYPE_ORDER, ClusterSpec
from shockwave_gym.errors import InputError


def test_parse_sorts_types_fastest_first_and_drops_zero_counts():
    spec = ClusterSpec.parse("k80=4, v100=12,p100=0")
    assert spec.types == ("v100", "k80")
    assert spec.counts == (12, 4)
    assert spec.total == 16
    assert str(spec) == "v100=12,k80=4"
    assert spec == ClusterSpec.parse("v100=12,k80=4")
    assert spec.count("p100") == 0 and spec.index("k80") == 1


def test_homogeneous_is_v100():
    spec = ClusterSpec.homogeneous(32)
    assert spec.is_homogeneous and spec.types == ("v100",) and spec.total == 32
    assert TYPE_ORDER[0] == "v100"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a100=4", "unknown GPU type 'a100'"),
        ("v100=4,v100=2", "given twice"),
        ("v100=four", "must be a whole number"),
        ("v100", "expected TYPE=COUNT"),
        ("v100=0,k80=0", "every GPU count is zero"),
        ("k80=-1", "whole GPU count >= 0"),
        ("", "expected TYPE=COUNT"),
    ],
)
def test_parse_errors_name_the_option_and_the_part(text, message):
    with pytest.raises(InputError, match="--cluster") as err:
        ClusterSpec.parse(text)
    assert message in str(err.value)


def test_constructor_rejects_unsorted_or_bad_counts():
    with pytest.raises(InputError, match="order"):
        ClusterSpec(("k80", "v100"), (1, 1))
    with pytest.raises(InputError, match="positive whole"):
        ClusterSpec(("v100",), (0,))
    with pytest.raises(InputError, match="no 'k80'"):
        ClusterSpec.homogeneous(4).index("k80")
