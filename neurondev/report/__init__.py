"""The result of explain and how it is made: the result model, the pipeline, advice, fixes and check."""
