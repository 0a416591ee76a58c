"""The result of explain and how it is made: the result model, the pipeline, verdicts, advice, verified fixes and check."""
