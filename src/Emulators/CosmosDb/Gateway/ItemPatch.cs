using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.Emulators.CosmosDb.Query;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// A partial document update: <c>{"operations": [{"op": "set", "path": "/a", "value": 1}, …], "condition": "from c where …"}</c>
/// (the .NET SDK's form) or the bare array of operations (the JavaScript SDK's form without a condition),
/// with the operations add, set, replace, remove, incr and move.
/// </summary>
internal sealed class ItemPatch
{
    private const int MaxOperations = 10;
    private readonly List<(string Op, string Path, JsonNode? Value, string? From)> _operations;
    private readonly PreparedQuery? _condition;

    private ItemPatch(List<(string, string, JsonNode?, string?)> operations, PreparedQuery? condition)
    {
        _operations = operations;
        _condition = condition;
    }

    public static ItemPatch Parse(JsonElement body)
    {
        var list = body;
        if ((body.ValueKind == JsonValueKind.Object && !body.TryGetProperty("operations", out list))
            || list.ValueKind != JsonValueKind.Array || list.GetArrayLength() == 0)
        {
            throw new BadRequestException("A patch needs a non-empty array of operations: [...] or {\"operations\": [...]}.");
        }

        if (list.GetArrayLength() > MaxOperations)
        {
            throw new BadRequestException($"A patch can have at most {MaxOperations} operations.");
        }

        var operations = new List<(string, string, JsonNode?, string?)>();
        foreach (var operation in list.EnumerateArray())
        {
            if (operation.ValueKind != JsonValueKind.Object)
            {
                throw new BadRequestException("Each patch operation must be a JSON object.");
            }

            var op = operation.TryGetProperty("op", out var o) && o.ValueKind == JsonValueKind.String ? o.GetString()!.ToLowerInvariant() : null;
            var path = operation.TryGetProperty("path", out var p) && p.ValueKind == JsonValueKind.String ? p.GetString()! : null;
            if (op is not ("add" or "set" or "replace" or "remove" or "incr" or "move") || path is null || !path.StartsWith('/'))
            {
                throw new BadRequestException("Each patch operation needs an 'op' (add, set, replace, remove, incr, move) and a 'path' starting with '/'.");
            }

            var value = operation.TryGetProperty("value", out var v) ? JsonNode.Parse(v.GetRawText()) : null;
            var from = operation.TryGetProperty("from", out var f) && f.ValueKind == JsonValueKind.String ? f.GetString() : null;
            if (op == "incr" && (value is not JsonValue || value.GetValueKind() != JsonValueKind.Number))
            {
                throw new BadRequestException($"The incr operation on '{path}' needs a numeric value.");
            }

            if (op == "move" && from?.StartsWith('/') != true)
            {
                throw new BadRequestException($"The move operation to '{path}' needs a 'from' path starting with '/'.");
            }

            if (IsSystemPath(path) || (op == "move" && IsSystemPath(from!)))
            {
                throw new BadRequestException($"The patch path '{(IsSystemPath(path) ? path : from)}' is a system property and cannot be changed.");
            }

            operations.Add((op, path, value, from));
        }

        PreparedQuery? condition = null;
        if (body.ValueKind == JsonValueKind.Object && body.TryGetProperty("condition", out var c) && c.ValueKind == JsonValueKind.String)
        {
            condition = PreparedQuery.Get("SELECT * " + c.GetString());
        }

        return new ItemPatch(operations, condition);
    }

    /// <summary>The patched item body (system properties are rewritten afterwards).</summary>
    public JsonDocument Apply(StoredDocument existing)
    {
        if (_condition?.Query.Where is { } where)
        {
            var condition = new ExpressionCompiler(_condition.Query.Alias, new Dictionary<string, QueryValue>()).Compile(where);
            if (!QueryExecutor.Matches(condition, existing.Value))
            {
                throw new ConditionNotMetException();
            }
        }

        var root = JsonNode.Parse(existing.Json)!.AsObject();
        foreach (var (op, path, value, from) in _operations)
        {
            switch (op)
            {
                case "add":
                case "set":
                    Put(root, path, value?.DeepClone(), insertIntoArray: op == "add");
                    break;
                case "replace":
                    if (Get(root, path) is null && !Exists(root, path))
                    {
                        throw new BadRequestException($"Cannot replace '{path}': the path does not exist.");
                    }

                    Put(root, path, value?.DeepClone(), insertIntoArray: false);
                    break;
                case "remove":
                    Remove(root, path);
                    break;
                case "incr":
                    var current = Get(root, path);
                    var increment = value!.GetValue<double>();
                    if (current is null && !Exists(root, path))
                    {
                        Put(root, path, JsonValue.Create(increment), insertIntoArray: false);
                    }
                    else if (current is JsonValue number && number.TryGetValue<double>(out var existingNumber))
                    {
                        var sum = existingNumber + increment;
                        if (!double.IsFinite(sum))
                        {
                            throw new BadRequestException($"Cannot increment '{path}': the result is outside the range of a double.");
                        }

                        Put(root, path, JsonValue.Create(sum), insertIntoArray: false);
                    }
                    else
                    {
                        throw new BadRequestException($"Cannot increment '{path}': it is not a number.");
                    }

                    break;
                case "move":
                    var moved = Get(root, from!)?.DeepClone();
                    if (moved is null && !Exists(root, from!))
                    {
                        throw new BadRequestException($"Cannot move from '{from}': the path does not exist.");
                    }

                    Remove(root, from!);
                    Put(root, path, moved, insertIntoArray: false);
                    break;
            }
        }

        return JsonDocument.Parse(root.ToJsonString());
    }

    private static bool IsSystemPath(string path) => path is "/id" or "/_rid" or "/_etag" or "/_ts" or "/_self";

    private static (JsonNode Parent, string Key) Parent(JsonObject root, string path)
    {
        var segments = path.Split('/')[1..].Select(s => s.Replace("~1", "/").Replace("~0", "~")).ToArray();
        JsonNode current = root;
        for (var i = 0; i < segments.Length - 1; i++)
        {
            current = Child(current, segments[i]) ?? throw new BadRequestException($"The patch path '{path}' does not exist (at '{segments[i]}').");
        }

        return (current, segments[^1]);
    }

    private static JsonNode? Child(JsonNode node, string key) => node switch
    {
        JsonObject obj => obj[key],
        JsonArray array when int.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out var index) && index < array.Count => array[index],
        _ => null,
    };

    private static JsonNode? Get(JsonObject root, string path)
    {
        var (parent, key) = Parent(root, path);
        return Child(parent, key);
    }

    private static bool Exists(JsonObject root, string path)
    {
        var (parent, key) = Parent(root, path);
        return parent switch
        {
            JsonObject obj => obj.ContainsKey(key),
            JsonArray array => int.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out var index) && index < array.Count,
            _ => false,
        };
    }

    private static void Put(JsonObject root, string path, JsonNode? value, bool insertIntoArray)
    {
        var (parent, key) = Parent(root, path);
        switch (parent)
        {
            case JsonObject obj:
                obj[key] = value;
                break;
            case JsonArray array when key == "-":
                array.Add(value);
                break;
            case JsonArray array when int.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out var index) && index <= array.Count:
                if (insertIntoArray || index == array.Count)
                {
                    array.Insert(index, value);
                }
                else
                {
                    array[index] = value;
                }

                break;
            default:
                throw new BadRequestException($"The patch path '{path}' does not name a property or array position.");
        }
    }

    private static void Remove(JsonObject root, string path)
    {
        var (parent, key) = Parent(root, path);
        var removed = parent switch
        {
            JsonObject obj => obj.Remove(key),
            JsonArray array when int.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out var index) && index < array.Count
                => RemoveAt(array, index),
            _ => false,
        };
        if (!removed)
        {
            throw new BadRequestException($"Cannot remove '{path}': the path does not exist.");
        }
    }

    private static bool RemoveAt(JsonArray array, int index)
    {
        array.RemoveAt(index);
        return true;
    }

    internal sealed class ConditionNotMetException : Exception;
}
