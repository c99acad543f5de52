using System.Globalization;
using System.Text.RegularExpressions;

namespace DroneDelivery.Services.Tests.HttpFiles;

/// <summary>One request of a <c>.http</c> file as written: its variables not yet substituted.</summary>
public sealed record HttpFileRequest(
    string File,
    int Line,
    string Title,
    string Method,
    string Url,
    IReadOnlyList<KeyValuePair<string, string>> Headers,
    string? Body)
{
    /// <summary>Where the request is written, for messages: <c>docs/api/gateway.http:17 (GetInvoice …)</c>.</summary>
    public string Where => $"{File}:{Line}" + (Title.Length > 0 ? $" ({Title})" : string.Empty);

    /// <summary>Every text of the request that may name variables: the URL, the header values and the body.</summary>
    public IEnumerable<string> Texts => [Url, .. Headers.Select(h => h.Value), .. Body is null ? [] : new[] { Body }];
}

/// <summary>
/// A <c>.http</c> file in the subset that Visual Studio Code's REST Client, Visual Studio and the JetBrains
/// IDEs all read: file variables (<c>@name = value</c>), requests separated by lines starting with
/// <c>###</c> (the rest of the line is the request's title), comment lines starting with <c>#</c> or
/// <c>//</c>, a request line <c>METHOD URL [HTTP/1.1]</c>, headers up to the first empty line, then the
/// body. <c>{{name}}</c> names a file variable, <c>{{$timestamp}}</c> the current Unix time.
/// </summary>
public sealed partial class HttpFile
{
    /// <summary>The HTTP methods a request line may start with.</summary>
    private static readonly string[] Methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

    private HttpFile(string path, IReadOnlyDictionary<string, string> variables, IReadOnlyList<HttpFileRequest> requests, IReadOnlyList<string> problems)
    {
        Path = path;
        Variables = variables;
        Requests = requests;
        Problems = problems;
    }

    /// <summary>The file's path as given, for messages.</summary>
    public string Path { get; }

    /// <summary>The file variables, by name, as written.</summary>
    public IReadOnlyDictionary<string, string> Variables { get; }

    public IReadOnlyList<HttpFileRequest> Requests { get; }

    /// <summary>What cannot be read: a line that is no request line, a header without a colon, a variable defined twice.</summary>
    public IReadOnlyList<string> Problems { get; }

    public static HttpFile Parse(string path, string text)
    {
        var lines = text.ReplaceLineEndings("\n").Split('\n');
        var variables = new Dictionary<string, string>(StringComparer.Ordinal);
        var requests = new List<HttpFileRequest>();
        var problems = new List<string>();

        // Blocks: the lines before the first ### and those after each ### (whose text is the block's title).
        var start = 0;
        var title = string.Empty;
        for (var i = 0; i <= lines.Length; i++)
        {
            if (i < lines.Length && !lines[i].StartsWith("###", StringComparison.Ordinal))
            {
                continue;
            }

            ReadBlock(path, lines, start, i, title, variables, requests, problems);
            if (i < lines.Length)
            {
                title = lines[i][3..].Trim();
                start = i + 1;
            }
        }

        return new HttpFile(path, variables, requests, problems);
    }

    /// <summary>
    /// <paramref name="text"/> with every <c>{{name}}</c> replaced: by <paramref name="overrides"/>, else by the
    /// file's variable (itself substituted), and <c>{{$timestamp}}</c> by <paramref name="now"/>'s Unix time.
    /// A name neither defines is a problem and stays as written.
    /// </summary>
    public string Substitute(string text, IReadOnlyDictionary<string, string> overrides, DateTimeOffset now, ICollection<string> problems, string where)
    {
        return Substitute(text, 0);

        string Substitute(string value, int depth) => Reference().Replace(value, match =>
        {
            var name = match.Groups["name"].Value;
            if (name == "$timestamp")
            {
                return now.ToUnixTimeSeconds().ToString(CultureInfo.InvariantCulture);
            }

            if (overrides.TryGetValue(name, out var given))
            {
                return given;
            }

            if (Variables.TryGetValue(name, out var defined) && depth < 8)
            {
                return Substitute(defined, depth + 1);
            }

            problems.Add($"{where}: {{{{{name}}}}} names no variable of {Path}");
            return match.Value;
        });
    }

    /// <summary>The names a text refers to with <c>{{name}}</c>, system variables (<c>$…</c>) included.</summary>
    public static IEnumerable<string> References(string text) =>
        Reference().Matches(text).Select(m => m.Groups["name"].Value);

    private static void ReadBlock(
        string path, string[] lines, int start, int end, string title,
        Dictionary<string, string> variables, List<HttpFileRequest> requests, List<string> problems)
    {
        string? method = null;
        string? url = null;
        var requestLine = 0;
        var headers = new List<KeyValuePair<string, string>>();
        List<string>? body = null;
        for (var i = start; i < end; i++)
        {
            var line = lines[i];
            var trimmed = line.Trim();
            if (body is not null)
            {
                body.Add(line);
                continue;
            }

            if (method is null)
            {
                if (trimmed.Length == 0 || IsComment(trimmed))
                {
                    continue;
                }

                if (Variable().Match(trimmed) is { Success: true } variable)
                {
                    if (!variables.TryAdd(variable.Groups["name"].Value, variable.Groups["value"].Value.Trim()))
                    {
                        problems.Add($"{path}:{i + 1}: the variable @{variable.Groups["name"].Value} is defined twice");
                    }

                    continue;
                }

                if (RequestLine().Match(trimmed) is { Success: true } request && Methods.Contains(request.Groups["method"].Value, StringComparer.Ordinal))
                {
                    (method, url, requestLine) = (request.Groups["method"].Value, request.Groups["url"].Value, i + 1);
                    continue;
                }

                problems.Add($"{path}:{i + 1}: '{trimmed}' is no request line (METHOD URL [HTTP/1.1]), variable or comment");
                return;
            }

            if (trimmed.Length == 0)
            {
                body = [];
                continue;
            }

            if (IsComment(trimmed))
            {
                continue;
            }

            var colon = trimmed.IndexOf(':', StringComparison.Ordinal);
            if (colon <= 0)
            {
                problems.Add($"{path}:{i + 1}: '{trimmed}' is no header (Name: value)");
                continue;
            }

            headers.Add(new(trimmed[..colon].Trim(), trimmed[(colon + 1)..].Trim()));
        }

        if (method is null || url is null)
        {
            return;
        }

        var text = body is null ? null : string.Join('\n', body).Trim();
        requests.Add(new HttpFileRequest(path, requestLine, title, method, url, headers, string.IsNullOrEmpty(text) ? null : text));
    }

    private static bool IsComment(string line) => line.StartsWith('#') || line.StartsWith("//", StringComparison.Ordinal);

    [GeneratedRegex(@"^@(?<name>[A-Za-z_][A-Za-z0-9_-]*)\s*=(?<value>.*)$")]
    private static partial Regex Variable();

    [GeneratedRegex(@"^(?<method>[A-Z]+)\s+(?<url>\S+)(?:\s+HTTP/\d(?:\.\d)?)?$")]
    private static partial Regex RequestLine();

    [GeneratedRegex(@"\{\{\s*(?<name>\$?[A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")]
    private static partial Regex Reference();
}
