// The graph both servers host: one node that answers. The benchmark only
// drives the thread API, so the graph's work does not matter.
import { StateGraph, MessagesAnnotation, START, END } from "@langchain/langgraph";

const callModel = async () => ({ messages: [{ type: "ai", content: "hello" }] });

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("call_model", callModel)
  .addEdge(START, "call_model")
  .addEdge("call_model", END)
  .compile();
