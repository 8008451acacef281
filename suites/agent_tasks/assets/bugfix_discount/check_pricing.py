from pricing import apply_discount, total

assert apply_discount(100, 10) == 90.0, f"apply_discount(100, 10) gave {apply_discount(100, 10)}, expected 90.0"
assert apply_discount(19.99, 0) == 19.99
assert total([10, 20], 50) == 15.0
print("all pricing tests passed")
