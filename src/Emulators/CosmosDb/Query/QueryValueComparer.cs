namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>Equality and ordering with Cosmos DB semantics.</summary>
internal static class QueryValueComparer
{
    /// <summary>
    /// <c>=</c>: undefined if either side is undefined or the two have different types (so
    /// <c>null = 'x'</c> and <c>null != 'x'</c> both exclude the item); deep for arrays and objects.
    /// </summary>
    public static QueryValue EqualsOperator(in QueryValue left, in QueryValue right)
    {
        if (left.IsUndefined || right.IsUndefined || left.Kind != right.Kind)
        {
            return QueryValue.Undefined;
        }

        return QueryValue.FromBoolean(DeepEquals(left, right));
    }

    public static bool DeepEquals(in QueryValue left, in QueryValue right)
    {
        if (left.Kind != right.Kind)
        {
            return false;
        }

        switch (left.Kind)
        {
            case QueryValueKind.Undefined:
            case QueryValueKind.Null:
                return true;
            case QueryValueKind.Boolean:
            case QueryValueKind.Number:
                return left.Number.Equals(right.Number);
            case QueryValueKind.String:
                return left.StringEquals(right);
            case QueryValueKind.Array:
                if (left.ArrayLength != right.ArrayLength)
                {
                    return false;
                }

                using (var l = left.EnumerateArray().GetEnumerator())
                using (var r = right.EnumerateArray().GetEnumerator())
                {
                    while (l.MoveNext() && r.MoveNext())
                    {
                        if (!DeepEquals(l.Current, r.Current))
                        {
                            return false;
                        }
                    }
                }

                return true;
            default:
                var leftProperties = left.EnumerateObject().Where(p => !p.Value.IsUndefined).ToList();
                var rightProperties = right.EnumerateObject().Where(p => !p.Value.IsUndefined).ToList();
                if (leftProperties.Count != rightProperties.Count)
                {
                    return false;
                }

                foreach (var property in leftProperties)
                {
                    if (!DeepEquals(property.Value, right.GetProperty(property.Key)))
                    {
                        return false;
                    }
                }

                return true;
        }
    }

    /// <summary>
    /// <c>&lt;</c>, <c>&gt;</c> and friends: defined only for two values of the same primitive type,
    /// undefined otherwise. Returns the comparison sign, or null when the result is undefined.
    /// </summary>
    public static int? CompareForOperator(in QueryValue left, in QueryValue right)
    {
        if (left.Kind != right.Kind)
        {
            return null;
        }

        return left.Kind switch
        {
            QueryValueKind.Null => 0,
            QueryValueKind.Boolean or QueryValueKind.Number => left.Number.CompareTo(right.Number),
            QueryValueKind.String => Math.Sign(string.CompareOrdinal(left.AsString(), right.AsString())),
            _ => null,
        };
    }

    /// <summary>The total order ORDER BY uses: by type first (undefined, null, boolean, number, string, array, object).</summary>
    public static int CompareForSort(in QueryValue left, in QueryValue right)
    {
        if (left.Kind != right.Kind)
        {
            return ((int)left.Kind).CompareTo((int)right.Kind);
        }

        switch (left.Kind)
        {
            case QueryValueKind.Boolean:
            case QueryValueKind.Number:
                return left.Number.CompareTo(right.Number);
            case QueryValueKind.String:
                return string.CompareOrdinal(left.AsString(), right.AsString());
            case QueryValueKind.Array:
                using (var l = left.EnumerateArray().GetEnumerator())
                using (var r = right.EnumerateArray().GetEnumerator())
                {
                    while (true)
                    {
                        var hasLeft = l.MoveNext();
                        var hasRight = r.MoveNext();
                        if (!hasLeft || !hasRight)
                        {
                            return hasLeft.CompareTo(hasRight);
                        }

                        var c = CompareForSort(l.Current, r.Current);
                        if (c != 0)
                        {
                            return c;
                        }
                    }
                }

            case QueryValueKind.Object:
                return string.CompareOrdinal(left.ToString(), right.ToString());
            default:
                return 0;
        }
    }
}
