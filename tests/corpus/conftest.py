"""The corpus samples are analysed, never imported, run or collected as tests."""

collect_ignore = ["samples"]
