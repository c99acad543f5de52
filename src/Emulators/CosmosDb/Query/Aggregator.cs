namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>Accumulates one aggregate function over the documents of a partition.</summary>
internal sealed class Aggregator(FunctionCallExpression call)
{
    private long _count;
    private double _sum;
    private bool _invalid;
    private QueryValue _extreme;

    public FunctionCallExpression Call { get; } = call;

    public void Add(in QueryValue value)
    {
        if (value.IsUndefined)
        {
            return;
        }

        switch (Call.Name)
        {
            case "COUNT":
                _count++;
                break;
            case "SUM":
            case "AVG":
                // Any defined non-number makes the whole aggregate undefined, as in the service.
                if (value.Kind != QueryValueKind.Number)
                {
                    _invalid = true;
                    return;
                }

                _sum += value.Number;
                _count++;
                break;
            case "MIN":
            case "MAX":
                if (value.Kind is QueryValueKind.Array or QueryValueKind.Object)
                {
                    _invalid = true;
                    return;
                }

                if (_count == 0)
                {
                    _extreme = value;
                }
                else
                {
                    var c = QueryValueComparer.CompareForSort(value, _extreme);
                    if ((Call.Name == "MIN" && c < 0) || (Call.Name == "MAX" && c > 0))
                    {
                        _extreme = value;
                    }
                }

                _count++;
                break;
        }
    }

    // A sum that overflows a double has no JSON form; it is undefined, as arithmetic that overflows is.
    public QueryValue Result => Call.Name switch
    {
        "COUNT" => QueryValue.FromNumber(_count),
        "SUM" => _invalid || !double.IsFinite(_sum) ? QueryValue.Undefined : QueryValue.FromNumber(_sum),
        "AVG" => _invalid || _count == 0 || !double.IsFinite(_sum) ? QueryValue.Undefined : QueryValue.FromNumber(_sum / _count),
        _ => _invalid || _count == 0 ? QueryValue.Undefined : _extreme,
    };
}
