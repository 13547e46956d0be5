"""The guidance section as rendered (report/sections/_guidance.html.j2) on the synthetic study
(tests/support/report_study.py: TF 1.14, 2.3 and 2.21, no call-vs-predict rows): TensorFlow
today first, each rule with its interval, no rule under both USE and AVOID, no sentence that
says the study does not measure what it reports, and no call-vs-predict rule without its rows."""
import html as htmllib
import re


def _section(page: str) -> str:
    start = page.index('<section id="guidance">')
    return page[start:page.index("</section>", start)]


def _lists(block: str) -> tuple[set, set]:
    use, avoid = block.split('<span class="dont">AVOID</span>', 1)
    def names(part):
        return {htmllib.unescape(n) for n in re.findall(r"<li><b>(.*?)</b>", part)}
    return names(use), names(avoid)


def test_today_first_with_intervals_and_no_rule_in_both_lists(rendered):
    section = _section(rendered["html"])
    assert rendered["info"]["section_errors"] == {}
    today = section.index('id="guide-today"')
    assert "TensorFlow today: TF 2.21.0" in section
    assert today < section.index("Every framework and version measured")
    blocks = section.split('<div class="guide">')[1:]
    assert blocks
    for block in blocks:
        use, avoid = _lists(block)
        assert not use & avoid, block
    rules = re.findall(r"<li><b>.*?</li>", section[today:])
    assert rules and all("interval" in r for r in rules)


def test_no_contradicting_sentence_and_no_predict_rule_without_rows(rendered):
    section = _section(rendered["html"])
    assert "not measured by this study" not in section and "is not measured" not in section
    assert 'id="guide-predict"' not in section  # the synthetic study has no call vs predict
