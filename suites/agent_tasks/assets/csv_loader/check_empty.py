from loader import load_rows

rows = load_rows("a,b\n\nc,d\n")
assert rows == [["a", "b"], ["c", "d"]], f"got {rows}"
print("empty lines: ok")
