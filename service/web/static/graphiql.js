// GraphiQL on the local assets, sending the dashboard's token of this browser session.

const token = sessionStorage.getItem("webhooks.token");
const headers = token ? JSON.stringify({ Authorization: `Bearer ${token}` }, null, 2)
  : JSON.stringify({ Authorization: "Bearer <token>" }, null, 2);
const fetcher = GraphiQL.createFetcher({ url: "/graphql" });

ReactDOM.render(
  React.createElement(GraphiQL, { fetcher, defaultHeaders: headers, headerEditorEnabled: true,
    shouldPersistHeaders: false }),
  document.getElementById("graphiql"));
