"""Every statement of the {{ cookiecutter.resource_plural }} resource.

Constant text with $n parameters: the text never changes, so asyncpg's statement cache hits and
PostgreSQL plans each statement once per connection.
"""

COLUMNS = "id, name, description, price_cents, quantity, created_at, updated_at, version"

INSERT = f"""
    INSERT INTO {{ cookiecutter.resource_plural }} (name, description, price_cents, quantity)
    VALUES ($1, $2, $3, $4)
    RETURNING {COLUMNS}
"""

SELECT_BY_ID = f"""
    SELECT {COLUMNS}
      FROM {{ cookiecutter.resource_plural }}
     WHERE id = $1
"""

# Keyset pagination: WHERE id > $1 walks the primary-key index, so page 5,000 costs what page 1 does.
SELECT_PAGE = f"""
    SELECT {COLUMNS}
      FROM {{ cookiecutter.resource_plural }}
     WHERE id > $1
     ORDER BY id
     LIMIT $2
"""

# One statement for every PATCH: omitted fields keep their value ($3 says whether description,
# the one nullable field, was sent). $7 is the If-Match version, or NULL for an unconditional update.
UPDATE = f"""
    UPDATE {{ cookiecutter.resource_plural }}
       SET name        = COALESCE($2, name),
           description = CASE WHEN $3::boolean THEN $4 ELSE description END,
           price_cents = COALESCE($5, price_cents),
           quantity    = COALESCE($6, quantity),
           version     = version + 1,
           updated_at  = now()
     WHERE id = $1
       AND ($7::integer IS NULL OR version = $7)
    RETURNING {COLUMNS}
"""

SELECT_VERSION = """
    SELECT version
      FROM {{ cookiecutter.resource_plural }}
     WHERE id = $1
"""

DELETE = """
    DELETE FROM {{ cookiecutter.resource_plural }}
     WHERE id = $1
    RETURNING id
"""
