"""The Tuner's view of the cluster's policies: the decision card lists what each policy
step excluded and why; the scores figure marks each broker's isolation group."""
from dashboard.analysis import analyze
from dashboard.figures.scores import broker_scores
from dashboard.policy_notes import policy_lines, policy_steps, policy_summary
from dashboard.sources import get_snapshot
from engine.policies import broker_groups, policies_of
from engine.samples import sample_config
from layouts.tuner import policy_card


def _text(c) -> str:
    if isinstance(c, str):
        return c
    kids = getattr(c, "children", None)
    if kids is None:
        return ""
    return " ".join(_text(k) for k in (kids if isinstance(kids, list) else [kids]))


def test_decision_card_names_the_policies_and_exclusions():
    snap = get_snapshot("sample:isolation-groups")
    a = analyze(snap, sample_config("isolation-groups"), 0)
    assert a.first_placement.broker == "broker-3:8080"
    steps = policy_steps(a.first_placement)
    assert [n.split(":")[0] for n, _ in steps][:2] == ["namespace isolation `payments`", "anti-affinity group `payments-ha` (filterAntiAffinityGroupOwnedBrokers)"]
    lines = policy_lines(a.first_placement)
    assert any(ln.startswith("broker-7:8080 excluded: namespace acme/payments-a is isolated by policy `payments` "
                             "to primary brokers `broker-[0-3].*`") for ln in lines)
    text = " ".join(_text(c) for c in policy_card(a))
    assert "Cluster policies: 2 isolation policies" in text and "broker-1:8080 excluded" in text
    # a snapshot without policies shows nothing
    plain = analyze(get_snapshot("sample:yahoo-japan-3-brokers"), sample_config("yahoo-japan-3-brokers"), 0)
    assert policy_card(plain) == [] and policy_summary(plain.snap.ld) is None


def test_scores_mark_each_brokers_group():
    snap = get_snapshot("sample:isolation-groups")
    a = analyze(snap, sample_config("isolation-groups"), 0)
    groups = broker_groups(policies_of(snap.ld), snap.view.brokers)
    assert groups["broker-0:8080"] == "primary: payments" and groups["broker-4:8080"] == "shared"
    fig = broker_scores(snap.view, a.result, a.config, a.status, groups=groups)
    marks = {t.name: list(t.customdata) for t in fig.data if t.legendgroup == "groups"}
    assert set(marks) == {"primary: payments", "primary: analytics", "shared"}
    assert sorted(marks["primary: analytics"]) == ["broker-6:8080", "broker-7:8080"]


def test_home_card_explains_the_difference():
    from layouts.home import layout

    text = str(layout())
    assert "Isolation groups and an anti-affinity group change the destination" in text
    assert "broker-3 with them, broker-7 without" in text and "pill-policy" in text


def _count(c) -> int:
    kids = getattr(c, "children", None)
    if kids is None or isinstance(kids, str):
        return 1
    return 1 + sum(_count(k) for k in (kids if isinstance(kids, list) else [kids]))


def test_policy_box_lists_every_placement_bounded():
    """The isolation-groups cycle places two acme/payments-a bundles: the box explains both (each with its
    isolation and anti-affinity steps), as one text block; a cycle of many placements lists the first 20
    and says how many more, each step's exclusions bounded too."""
    from dashboard.policy_notes import cycle_placements, placements_policy_text

    a = analyze(get_snapshot("sample:isolation-groups"), sample_config("isolation-groups"), 0)
    places = cycle_placements(a.cycle)
    assert len(places) == 2 and places[0][0] != places[1][0]
    card = policy_card(a)
    text = _text(card[0])
    for bundle, dec in places:
        assert f"{bundle} → {dec.broker}" in text
    assert text.count("anti-affinity group `payments-ha`") >= 2 and text.count("broker-7:8080 excluded") == 2
    assert _count(card[0]) <= 6  # one text block, not one component per line
    many = [(f"t/ns/{i}", places[0][1]) for i in range(50)]
    block = placements_policy_text(many, limit=20, per_step=2)
    assert block.count(" → broker-3:8080") == 20 and block.endswith("… and 30 more placements (the report lists everything)")
    assert "… 2 more excluded" in block and "broker-5:8080 excluded" not in block
