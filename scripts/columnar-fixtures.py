#!/usr/bin/env python3
"""Writes tests/fixtures/columnar/: Parquet files and a Hugging Face
`save_to_disk` directory made by the Python tools MLPerf users have
(pyarrow, pandas, datasets), so the tests check llmload against their real
output without needing Python themselves.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install datasets pyarrow pandas
    /tmp/venv/bin/python scripts/columnar-fixtures.py

Every file holds the same 10 rows (see ROWS); the tests know the values.
"""

import json
import shutil
from pathlib import Path

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "columnar"

ROWS = [
    {
        "id": i,
        "user_prompt": f"Question {i}: what is {i} + {i}?",
        "system_prompt": "Answer with a number." if i % 2 == 0 else None,
        "answer": str(2 * i),
        "ids": [100 + i, 200 + i, 300 + i],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": f"hi {i}"},
        ],
        "score": i / 4,
    }
    for i in range(10)
]


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    table = pa.Table.from_pylist(ROWS)
    # One file per codec, two row groups each.
    for codec in ["snappy", "zstd", "gzip", "lz4", "none"]:
        pq.write_table(table, OUT / f"rows-{codec}.parquet", compression=codec, row_group_size=6)
    # pandas: a categorical (dictionary) column and a float column with a NaN.
    df = pd.DataFrame(
        {
            "input_text": [r["user_prompt"] for r in ROWS],
            "label": pd.Categorical(["A", "B"] * 5),
            "max_tokens": [float(8 + i) if i != 3 else float("nan") for i in range(10)],
        }
    )
    df.to_parquet(OUT / "pandas.parquet", compression="snappy")
    # A DatasetDict of two splits, MLPerf's GPQA-like columns in the test split.
    train = datasets.Dataset.from_list(ROWS[:6])
    test = datasets.Dataset.from_list(
        [
            {"question": f"Q{i}", "choice1": "x", "choice2": "y", "answer": "A"}
            for i in range(4)
        ]
    )
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(OUT / "hf-dict"))
    sizes = {p.name: p.stat().st_size for p in sorted(OUT.rglob("*")) if p.is_file()}
    print(json.dumps(sizes, indent=1))
    print("total", sum(sizes.values()), "bytes")


if __name__ == "__main__":
    main()
