"""A suite's ``aggregates:`` as frozen table specs (computed from records in ``report/aggregates.py``)."""
