//! Turning a finished run into summary.json, report.txt and the console report.
