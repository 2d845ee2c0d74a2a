//! Answer extractors (MLPerf's `evaluation/extractor.py`).
