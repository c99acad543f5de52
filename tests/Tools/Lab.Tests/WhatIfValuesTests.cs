using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// What-if values read as helm reads them: <c>--set</c> syntax and typing, helm's merge order and
/// coalescing, YAML typing, and the chart's schema with the path and rule of each violation.
/// (tests/Charts.Tests/LabValuesTests checks the same merges against the real helm.)
/// </summary>
public sealed class WhatIfValuesTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("whatif-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public void Set_takes_dotted_paths_list_items_and_comma_separated_pairs()
    {
        var values = Set("a.b.c=1,a.d=x,list[1].name=second,list[0]=first");

        Assert.Equal(1L, values.Get("a.b.c"));
        Assert.Equal("x", values.Get("a.d"));
        var list = Assert.IsType<List<object?>>(values.Get("list"));
        Assert.Equal("first", list[0]);
        Assert.Equal("second", Assert.IsType<Dictionary<string, object?>>(list[1])["name"]);
    }

    [Fact]
    public void A_backslash_makes_a_comma_dot_or_equals_sign_plain()
    {
        var values = Set(@"annotations.example\.com/team=a\,b,x=c\=d");

        Assert.Equal("a,b", values.Map("annotations")["example.com/team"]);
        Assert.Equal("c=d", values.Get("x"));
    }

    [Theory]
    [InlineData("true", true)]
    [InlineData("FALSE", false)]
    [InlineData("100", 100L)]
    [InlineData("-1", -1L)]
    [InlineData("0", 0L)]
    [InlineData("007", "007")]
    [InlineData("0.5", "0.5")]
    [InlineData("00:00:30", "00:00:30")]
    [InlineData("", "")]
    public void Set_types_values_as_helm_does(string text, object expected)
    {
        Assert.Equal(expected, Set("v=" + text).Get("v"));
    }

    [Fact]
    public void Set_null_is_null_and_set_string_is_always_text()
    {
        Assert.True(Set("v=null").ToMap().ContainsKey("v"));
        Assert.Null(Set("v=null").Get("v"));
        Assert.Equal("100", Apply(new ValuesSource(ValuesSourceKind.SetString, "v=100")).Get("v"));
        Assert.Equal("true", Apply(new ValuesSource(ValuesSourceKind.SetString, "v=true")).Get("v"));
    }

    [Fact]
    public void Braces_make_a_list()
    {
        Assert.Equal(new List<object?> { 1L, "two", true }, Set("v={1,two,true},w=3").Get("v"));
        Assert.Equal(3L, Set("v={1,two,true},w=3").Get("w"));
    }

    [Fact]
    public void Set_file_reads_the_file_as_text()
    {
        var file = Path.Combine(_directory, "cert.pem");
        File.WriteAllText(file, "line 1\nline 2\n");

        Assert.Equal("line 1\nline 2\n", Apply(new ValuesSource(ValuesSourceKind.SetFile, $"tls.cert={file}")).Get("tls.cert"));
    }

    [Theory]
    [InlineData("a.b", "key \"b\" has no value")]
    [InlineData("a,b=1", "key \"a\" has no value (cannot end with ,)")]
    [InlineData("a[x]=1", "error parsing index")]
    [InlineData("a={1,2", "list must terminate with '}'")]
    [InlineData("image.tag.x=1", "\"tag\" is 1.0.0, not a map")]
    public void A_bad_expression_is_refused_naming_it(string expression, string problem)
    {
        var overlay = ValuesTree.Parse("image:\n  tag: \"1.0.0\"\n", "test");
        var error = Assert.Throws<InvalidDataException>(() => new WhatIf([new(ValuesSourceKind.Set, expression)]).UserValues(overlay));

        Assert.Contains($"--set {expression}", error.Message);
        Assert.Contains(problem, error.Message);
    }

    [Fact]
    public void Files_merge_in_order_then_every_set_then_every_set_string_whatever_the_command_line_order()
    {
        var first = Write("first.yaml", "a: { x: 1, y: 1 }\nlist: [1, 2]\n");
        var second = Write("second.yaml", "a: { y: 2 }\nlist: [3]\n");
        var whatIf = new WhatIf(
        [
            new(ValuesSourceKind.SetString, "a.s=string"),
            new(ValuesSourceKind.Set, "a.s=set,a.z=3"),
            new(ValuesSourceKind.File, first),
            new(ValuesSourceKind.File, second),
        ]);

        var values = whatIf.UserValues(ValuesTree.Parse("a: { w: 0 }\n", "overlay"));

        Assert.Equal(0L, values.Get("a.w"));
        Assert.Equal(1L, values.Get("a.x"));
        Assert.Equal(2L, values.Get("a.y"));
        Assert.Equal(3L, values.Get("a.z"));
        Assert.Equal("string", values.Get("a.s"));
        Assert.Equal(new List<object?> { 3L }, values.Get("list"));
    }

    [Fact]
    public void A_user_null_removes_the_chart_default_and_maps_merge_under_the_user_s_values()
    {
        var defaults = ValuesTree.Parse("a: { x: 1, y: 2, nested: { k: v } }\nb: keep\nlist: [1, 2]\n", "defaults");
        var user = ValuesTree.Parse("a: { x: ~, nested: { k2: v2 } }\nlist: [9]\nnew: ~\n", "user");

        var values = ValuesTree.Coalesce(defaults, user);

        Assert.False(((Dictionary<string, object?>)values.Get("a")!).ContainsKey("x"));
        Assert.Equal(2L, values.Get("a.y"));
        Assert.Equal("v", values.Get("a.nested.k"));
        Assert.Equal("v2", values.Get("a.nested.k2"));
        Assert.Equal("keep", values.Get("b"));
        Assert.Equal(new List<object?> { 9L }, values.Get("list"));
        Assert.True(values.ToMap().ContainsKey("new"));
    }

    [Theory]
    [InlineData("v: yes", true)]
    [InlineData("v: Off", false)]
    [InlineData("v: \"yes\"", "yes")]
    [InlineData("v: 1_000", 1000L)]
    [InlineData("v: 0x1F", 31L)]
    [InlineData("v: 010", 8L)]
    [InlineData("v: 1.0", 1.0)]
    [InlineData("v: 1e3", 1000.0)]
    [InlineData("v: -.5", -0.5)]
    [InlineData("v: 64mb", "64mb")]
    [InlineData("v: 00:00:30", "00:00:30")]
    [InlineData("v: PT1M", "PT1M")]
    public void Yaml_scalars_are_typed_as_helm_types_them(string yaml, object expected)
    {
        Assert.Equal(expected, ValuesTree.Parse(yaml, "test").Get("v"));
    }

    [Theory]
    [InlineData(0.05, "0.05")]
    [InlineData(1.5, "1.5")]
    [InlineData(123456.5, "123456.5")]
    [InlineData(1234567.5, "1.2345675e+06")]
    [InlineData(0.0001, "0.0001")]
    [InlineData(0.00001, "1e-05")]
    [InlineData(-2.5e-7, "-2.5e-07")]
    public void Fractions_reach_the_environment_as_go_prints_them(double value, string expected)
    {
        Assert.Equal(expected, ServiceEnvironment.Scalar(value));
    }

    [Theory]
    [InlineData(1.0, "1")]
    [InlineData(1048576.0, "1048576")]
    [InlineData(true, "true")]
    public void Whole_numbers_and_booleans_reach_the_environment_as_the_chart_writes_them(object value, string expected)
    {
        Assert.Equal(expected, ServiceEnvironment.Scalar(value));
    }

    private ValuesTree Set(string expression) => Apply(new ValuesSource(ValuesSourceKind.Set, expression));

    private static ValuesTree Apply(ValuesSource source) => new WhatIf([source]).UserValues(ValuesTree.Empty);

    private string Write(string name, string yaml)
    {
        var path = Path.Combine(_directory, name);
        File.WriteAllText(path, yaml);
        return path;
    }
}
