from loader import load_rows

rows = load_rows("# exported 2024-06-01\na,b\n\n# totals\nc,d\n")
assert rows == [["a", "b"], ["c", "d"]], f"got {rows}"
print("comments: ok")
