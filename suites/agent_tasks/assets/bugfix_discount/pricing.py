"""Prices for the shop: discounts and totals."""


def apply_discount(price: float, percent: float) -> float:
    """The price after a discount of ``percent`` (10 means 10 %)."""
    return round(price * (1 + percent / 100), 2)


def total(prices: list[float], percent: float = 0) -> float:
    """The sum of the prices, each discounted."""
    return round(sum(apply_discount(price, percent) for price in prices), 2)
