"""Integer bounds every layer agrees on: the database's bigint and JSON's exact integers."""

# PostgreSQL bigint: ids, versions, and every bigint column.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# The largest integer every JSON parser holds exactly (an IEEE 754 double): RFC 8259 section 6.
JSON_EXACT_INTEGER = 2**53
